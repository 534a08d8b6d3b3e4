"""Build hook: the C launch path (``tilejit._native``, listed in pyproject.toml) is optional.

Without a working C compiler the build goes on without it and says so, with what it costs;
tilejit then runs its pure-Python launch path (``tilejit/native.py``) and warns at the first
launch. Everything else is configured in pyproject.toml.
"""
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

MISSING = """
********************************************************************************************
tilejit: the C launch path (tilejit._native) could not be built: {error}
tilejit works without it, in pure Python, but each kernel call costs about 30 us of host time
with torch tensors instead of about 6. To build it, install a C compiler (e.g. `apt install gcc`
or `conda install gcc`) and reinstall tilejit. `python -m tilejit info` shows which launch path
is active.
********************************************************************************************
"""


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed optional extension loudly instead of failing."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001  (no compiler at all: distutils errors vary)
            self._missing(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._missing(e)

    @staticmethod
    def _missing(error):
        print(MISSING.format(error=error), file=sys.stderr)
        sys.stdout.write(MISSING.format(error=error))


setup(cmdclass={"build_ext": OptionalBuildExt})
