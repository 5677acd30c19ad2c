import sys

from jetmcp.run.cli import main

sys.exit(main())
