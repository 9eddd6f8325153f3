"""train.z_loss against PyTorch: the output-logit z-loss of PaLM
(Chowdhery et al. 2022, section 5) and Wortsman et al. 2023, written here
from the papers, not from tvlab's code: z = mean over the rows whose target
is not ignored of torch.logsumexp(logits, -1) ** 2, and the gradient of
c * z with respect to the logits by autograd, in float64, compared with
tvlab's on every host backend. Rows whose maxima lie 130 apart check that
each row's log-sum-exp is stable on its own."""

import os
import subprocess
import sys
import tempfile

import torch

from parity import check, finish, leaf, record

torch.set_default_dtype(torch.float64)
IGNORE = -100


def load(path):
    tensors = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            rank = int(fields[1])
            shape = [int(d) for d in fields[2:2 + rank]]
            tensors[fields[0]] = torch.tensor([float(v) for v in fields[2 + rank:]]).reshape(shape)
    return tensors


out = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()), "z_loss.txt")
subprocess.run([sys.argv[1], out], check=True)
d = load(out)
targets = d["targets"].long()
coefficient = d["coefficient"].item()
logits = leaf(d["logits"])
counted = targets != IGNORE
z = torch.logsumexp(logits, -1).pow(2)[counted].mean()
(coefficient * z).backward()
backends = sorted({name.split("/")[0] for name in d if "/" in name})
record(len(backends) >= 1, f"backends dumped: {', '.join(backends)}")
for backend in backends:
    check(f"{backend}/z", d[f"{backend}/z"], z.reshape(1), atol=0, rtol=2e-6)
    check(f"{backend}/dlogits", d[f"{backend}/dlogits"], logits.grad, atol=1e-10, rtol=2e-5)
finish()
