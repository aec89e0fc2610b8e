"""Issue 41 item 1: `up` and `down` name the bucket they create or delete in the question
they ask, so nobody confirms the loss of a bucket without reading its name."""

from __future__ import annotations

from reclaunch.runtime import lifecycle

from .conftest import ROOT


def test_up_and_down_name_the_bucket_the_stack_creates(world):
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(ROOT / "examples" / "aws-spot-bucket.yaml"))
    asked: list[str] = []
    lifecycle.up(plan, world.env(confirm=lambda q: asked.append(q) or True))
    assert "the bucket s3://acme-dlrm-spot-ckpt" in asked[-1], asked
    lifecycle.down(plan.name, world.env(confirm=lambda q: asked.append(q) or False))
    assert "and the bucket s3://acme-dlrm-spot-ckpt" in asked[-1], asked
    lifecycle.down(plan.name, world.env(confirm=lambda q: asked.append(q) or False), keep_storage=True)
    assert "keep its storage" in asked[-1] and "s3://" not in asked[-1], asked


def test_a_bucket_the_user_named_is_not_in_the_questions(world, plan):
    asked: list[str] = []
    lifecycle.up(plan, world.env(confirm=lambda q: asked.append(q) or True))
    lifecycle.down(plan.name, world.env(confirm=lambda q: asked.append(q) or False))
    assert not any("bucket" in q for q in asked), asked
