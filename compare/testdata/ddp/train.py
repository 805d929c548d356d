import os, sys, time, datetime, torch, torch.distributed as dist, torch.nn as nn
def ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
slow = os.environ.get("SLOW_RANK") == str(rank)
g = torch.Generator().manual_seed(rank)
x = torch.randn(4096, 32, generator=g); y = x.sum(1, keepdim=True)
if os.environ.get("DATA"):
    x = torch.load(os.environ["DATA"])[:4096]; y = x.sum(1, keepdim=True)
print(f"{ts()} [rank{rank}]: rank {rank}/{world} torch {torch.__version__} backend gloo", flush=True)
for step in range(1, 121):
    i = (step * 64) % 4096
    t0 = time.time()
    loss = nn.functional.mse_loss(model(x[i:i+64]), y[i:i+64])
    opt.zero_grad(); loss.backward(); opt.step()
    if slow:
        time.sleep(0.15)
    time.sleep(0.05)
    if step % 5 == 0:
        print(f"{ts()} [rank{rank}]: step {step} loss {loss.item():.4f} step_time {time.time()-t0:.3f}s", flush=True)
print(f"{ts()} [rank{rank}]: rank {rank} done", flush=True)
dist.destroy_process_group()
