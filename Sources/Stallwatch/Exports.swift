// The configuration, report model and policy types are part of the public API: `import Stallwatch`
// alone must be enough to configure a watchdog and read its reports.
@_exported import StallwatchPolicy
