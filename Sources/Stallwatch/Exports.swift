// What users type (configuration, the report model) comes with `import Stallwatch`; the policy
// and the exporters are the package's own.
@_exported import StallwatchReport
