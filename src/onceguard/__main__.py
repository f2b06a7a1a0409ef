import sys

from .surfaces.cli import main

sys.exit(main())
