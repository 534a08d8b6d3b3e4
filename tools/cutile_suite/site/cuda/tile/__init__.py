"""``import cuda.tile`` under tools/cutile_suite: this module replaces itself with tilejit.cutile
(``shim.install``; the import returns ``sys.modules["cuda.tile"]``). run.py puts ``site/`` on the
``PYTHONPATH`` of cuTile's test processes, so the processes they start get it too."""
import os

from cutile_suite import shim

shim.install(os.environ["CUTILE_SUITE_CHECKOUT"],
             simulator=os.environ.get("CUTILE_SUITE_SIMULATOR") == "1")
