import StallwatchReport
// Stallwatch policy
