# toy_dist/ is a separate distribution (a third-party model), tested in its own virtual
# environment by test_kit_fresh_venv.py, not collected with pubsift's tests
collect_ignore = ["toy_dist"]
