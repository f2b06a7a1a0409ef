"""Rule families, one module each; every module is imported by ``onceguard.rules.registry``."""
