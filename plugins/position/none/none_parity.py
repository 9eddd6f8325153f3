"""No positions against PyTorch: every hook is the identity, so the
embeddings pass unchanged (y = x) and queries and keys are not rotated; no
parameters."""

from parity import check, check_grads, dump, finish, leaf

for hook, shape in [("embed", "2,4,8"), ("rotate", "2,2,5,4")]:
    d = dump(kind="position", plugin="none", hook=hook, d_model=8, num_heads=2, offset=3,
             shape=shape)
    print("hook", hook, "shape", shape)
    assert not [n for n in d if n.startswith("param/")], "no position parameters expected"
    x = leaf(d["x"])
    y = x * 1
    check("y", d["y"], y)
    check_grads(d, y, {"dx": x})
finish()
