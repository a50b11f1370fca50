"""Helpers shared by the test suites of several parts (scripted model server)."""
