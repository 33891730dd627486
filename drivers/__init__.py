"""Device drivers, one package per family. Drivers never know whether a device is emulated."""
