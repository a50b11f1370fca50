"""Prompt rendering, both ways: an observation becomes the text the model sees (within a budget, answers hidden), and
a model reply becomes an action by the environment's action schema (plain fields, prose-described values, MCP tools).

Built on the wire only (a step's result is what it renders); the episode engine calls it on every turn.
"""
