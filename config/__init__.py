"""Default configuration files, shipped inside the package as mindtui._defaults."""
