"""The test harness behind noxfile.py: one module per concern (core, suite, chroot, wheels, checks, lanes)."""
