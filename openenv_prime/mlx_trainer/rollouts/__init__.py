"""Rollouts: the model playing episodes. `runner` plays G episodes per task through the client's episode engine,
one generation batch per round; `chat_tokens` keeps an episode as one token sequence with its completion mask;
`generation` samples a batch; `policy` is the model as the eval's policy. They import nothing from `training/`.
Nothing is imported here, so importing the folder loads no mlx.
"""
