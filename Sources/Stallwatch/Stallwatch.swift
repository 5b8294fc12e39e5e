// Stallwatch
