"""The skills hub: taps of git repositories of SKILL.md, their indexes, skill search and reading."""
