import sys, traceback, torch
sys.path.insert(0, "examples/triton_tutorials"); sys.path.insert(0, ".")
import tilejit as tile
import t09_persistent_matmul as T
e4m3 = torch.float8_e4m3fn
s = 512
a8 = (torch.randn(s, s, device="cuda") * s ** -0.25).to(e4m3)
w8 = (torch.randn(s, s, device="cuda") * s ** -0.25).to(e4m3).T
c = torch.empty((s, s), dtype=e4m3, device="cuda")
for what, f in [("atomic", lambda: tile.atomic(c)),
                ("view", lambda: tile.Tensor if False else None),
                ("launch", lambda: T.persistent_matmul(a8, w8, c, (128, 128, 128), True, 132, tma=True, fast_acc=True).sync()),
                ("launch2", lambda: T.persistent_matmul(a8, w8.T.permute(1, 0), c, (128, 128, 128), True, 132, tma=True, fast_acc=True).sync())]:
    try:
        f(); print(what, "ok")
    except Exception:
        print(what, "FAILED"); traceback.print_exc()
print("err", T.fp8_error(c.float().cpu().numpy(), (a8.float() @ w8.float()).cpu().numpy(), fast_acc=True))
