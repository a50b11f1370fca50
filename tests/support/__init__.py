"""Helpers shared by the test suites of several parts (the scripted model server is `openenv_prime.testing`)."""
