"""A toy fourth cloud with its own fabric, registered from the test's files only
(tests/extend/test_toy_cloud.py copies this folder to a temporary directory, puts it on
sys.path and names `toycloud.facts` in RECLAUNCH_CLOUDS). Not part of the product."""
