"""onceguard: find the code that breaks when a Python service runs as two or more replicas."""
__version__ = "0.1.0"
