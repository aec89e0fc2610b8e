"""`pulumi up` in stacks/azure/: plans the cluster.yaml named by `reclaunch:spec` and runs it."""

import pulumi

from reclaunch.planner import make_plan
from reclaunch.spec import load_spec
from stacks.azure.program import program

program(make_plan(load_spec(pulumi.Config("reclaunch").require("spec"))))
