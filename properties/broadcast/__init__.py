"""The ``broadcast`` scenario family: broadcast state (operator state in BROADCAST mode) of one
broadcast-state operator's subtasks across checkpoints, restores and rescales."""
