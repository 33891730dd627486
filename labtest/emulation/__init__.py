"""The emulated lab: a fabric model and device emulators that speak the real protocols."""
