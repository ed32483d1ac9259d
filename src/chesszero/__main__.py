"""`python -m chesszero` runs the command line."""

import sys

from chesszero.cli import main

sys.exit(main())
