"""The one episode engine: reset -> render -> act -> step -> feedback and limits -> reward, under one set of episode
rules (and their config keys), with one reward rule, and waves of episodes started on a pool's kept sockets.

Every consumer (eval, the verifiers taskset, the trainers) plays its episodes here; it uses the wire and prompt
rendering, and never where tasks come from: a driver hands it each episode's reset arguments.
"""
