"""Package data: see setup.py (shipped as labtest.stations)."""
