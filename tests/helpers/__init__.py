"""Helpers shared by the test suites: one job per module (processes, producers, KMES,
trace runs, tmux, hand-built bytes). Test modules import from here, never from each other."""
