"""Shared test setup: make the helper modules in tests/ (corpus, tileir_cases, ...) importable
from every test directory."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
