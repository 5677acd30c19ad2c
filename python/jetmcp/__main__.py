import sys

from jetmcp.cli import main

sys.exit(main())
