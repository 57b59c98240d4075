"""cb3's measuring tools, for development only (outside the wheel): run
them as `python asv_benchmarks/measure.py COMMAND ...` (cli.py lists the
commands). machine.py names the CPU as the engine reports it, timing.py
holds the shared timers and interleaved rounds, reference.py runs the Rust
reference binary, pages.py writes the generated sections of docs/results/.
"""
