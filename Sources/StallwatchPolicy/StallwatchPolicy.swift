// Stallwatch policy
