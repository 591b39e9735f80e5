"""Memory the package hands out stays valid and is not overwritten behind
the caller's back (docs/python.md, "Arrays"): an array over library memory
keeps its owner alive, a callback's image is its own, a start volume is
never uninitialised memory, and an ``out=`` that overlaps an input is
refused. tests/python.sh --asan (ctest python_asan of make test-sanitize)
runs these over the AddressSanitizer library, where a use-after-free is a
report, not a chance."""
import gc

import numpy as np
import pytest

import pyctrecon


def cpu():
    return pyctrecon.Context("cpu")


@pytest.fixture(scope="module")
def pet():
    system = pyctrecon.PetSystem(24, 24, 4, 8.0, 4, 1)
    return system, pyctrecon.PetPhantom.with_spheres(4.0)


def test_histo_arrays_keep_the_histo_alive(pet):
    system, phantom = pet
    h = pyctrecon.pet_simulate(system, phantom, events=2e4, attenuation=True, ctx=cpu())
    want_counts, want_factors = h.counts.copy(), h.factors.copy()
    assert want_counts.sum() > 0 and want_factors.any()
    counts, factors = h.counts, h.factors
    del h
    # the histo is garbage now but for these arrays: new allocations must not reuse its memory
    gc.collect()
    junk = [pyctrecon.pet_simulate(system, phantom, events=2e4, seed=s, ctx=cpu()) for s in (7, 8)]
    assert counts.tobytes() == want_counts.tobytes()
    assert factors.tobytes() == want_factors.tobytes()
    counts[0, 0, 0, 0] = 123.0  # writable, into memory that is still the histo's
    factors[-1, -1, -1, -1] = 5.0
    assert counts[0, 0, 0, 0] == 123.0 and factors[-1, -1, -1, -1] == 5.0
    assert np.isfinite(counts.sum()) and counts.sum() == pytest.approx(want_counts.sum() + 123.0
                                                                        - want_counts[0, 0, 0, 0])
    # a view of a view (numpy's base chain) keeps it too
    one = pyctrecon.PetHisto.create(system).counts[1]
    gc.collect()
    one[...] = 2.0
    assert one.shape == system.image_shape and (one == 2.0).all()
    del junk


def test_histo_arrays_write_through(pet):
    system, _ = pet
    h = pyctrecon.PetHisto.create(system, with_factors=True)
    h.counts[2] = 1.5
    assert h.counts[2].sum() == pytest.approx(1.5 * np.prod(system.image_shape))
    assert not h.counts[1].any()


def test_callback_images_are_copies(pet):
    system, phantom = pet
    h = pyctrecon.pet_simulate(system, phantom, events=5e4, ctx=cpu())
    pp = pyctrecon.PetProjector(system, ctx=cpu())
    seen = []
    res = pyctrecon.pet_reconstruct(pp, h, iterations=3, callback=lambda it, im: seen.append(im))
    assert len(seen) == 3
    # each its iteration's image: they differ, and the last one is the result
    assert seen[0].tobytes() != seen[1].tobytes() != seen[2].tobytes()
    assert seen[2].tobytes() == res.tobytes()
    want = [s.copy() for s in seen]
    del res
    gc.collect()
    junk = pyctrecon.pet_reconstruct(pp, h, iterations=2)  # reuses freed memory, if any
    for s, w in zip(seen, want):
        assert s.tobytes() == w.tobytes()
        s[...] = 0.0  # writable, and nobody else's
    del junk


def test_iterate_init_given_needs_the_volume():
    pg = pyctrecon.ParallelGeometry(16, 12)
    P = pyctrecon.Projector(pg, nslices=2, ctx=cpu())
    p = P.forward(np.ones(P.volume_shape, np.float32))
    with pytest.raises(ValueError, match=r"init='given' needs the start volume.*init=ARRAY"):
        pyctrecon.iterate(P, p, init="given", iterations=1, progress=None)
    start = np.full(P.volume_shape, 0.5, np.float32)
    a = pyctrecon.iterate(P, p, init=start, iterations=1, progress=None)
    b = pyctrecon.iterate(P, p, init=start.copy(), iterations=1, progress=None)
    assert a.tobytes() == b.tobytes()


def test_out_overlapping_an_input_is_refused(tmp_path):
    cpu_ctx = cpu()
    g = pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=24, nv=16, nviews=12, du=1.5,
                                        dv=1.5, volume=pyctrecon.Volume.cube(8))
    proj = pyctrecon.Phantom.shepp_logan(3.0).project(g, ctx=cpu_ctx, progress=None)
    # a volume (8^3 = 512 floats) at the start of the projections (12 x 16 x 24)
    with pytest.raises(ValueError, match="out shares memory with projections"):
        pyctrecon.fdk(proj, g, out=proj.reshape(-1)[:512].reshape(8, 8, 8), ctx=cpu_ctx)
    with pytest.raises(ValueError, match="out shares memory with projections"):
        pyctrecon.fdk(proj, g, out=proj.reshape(-1)[100:612].reshape(8, 8, 8), ctx=cpu_ctx,
                      host_budget="1G")
    want = pyctrecon.fdk(proj, g, ctx=cpu_ctx, progress=None)
    assert pyctrecon.fdk(proj, g, out=np.empty_like(want), ctx=cpu_ctx).tobytes() == want.tobytes()
    filt = pyctrecon.fdk_filter(proj, g, ctx=cpu_ctx)
    with pytest.raises(ValueError, match="out shares memory with filtered"):
        pyctrecon.fdk_backproject(filt, g, out=filt.reshape(-1)[:512].reshape(8, 8, 8), ctx=cpu_ctx)
    with pytest.raises(ValueError, match="out shares memory with images"):
        both = np.zeros(2 * 512 * 2, np.float64)
        img = both.view(np.float32)[:2 * 16 * 24].reshape(2, 16, 24)
        pyctrecon.backproject_reference(g, [0, 1], img, out=both[:512].reshape(8, 8, 8))
    P = pyctrecon.Projector(g, ctx=cpu_ctx)
    vol = np.ones(P.volume_shape, np.float32)
    pr = P.forward(vol, progress=None)
    with pytest.raises(ValueError, match="out shares memory with volume"):
        big = np.zeros(pr.size, np.float32)
        big[:vol.size] = 1.0
        P.forward(big[:vol.size].reshape(vol.shape), out=big.reshape(pr.shape))
    with pytest.raises(ValueError, match="out shares memory with projections"):
        P.adjoint(pr, out=pr.reshape(-1)[:vol.size].reshape(vol.shape))
    with pytest.raises(ValueError, match="out shares memory with projections"):
        pyctrecon.iterate(P, pr, out=pr.reshape(-1)[-vol.size:].reshape(vol.shape), iterations=1)
    truth = np.zeros(vol.size * 2, np.float32)
    with pytest.raises(ValueError, match="out shares memory with truth"):
        pyctrecon.iterate(P, pr, truth=truth[:vol.size].reshape(vol.shape),
                          out=truth[:vol.size].reshape(vol.shape), iterations=1)


def test_parallel_and_pet_out_overlap_refused(pet):
    cpu_ctx = cpu()
    pg = pyctrecon.ParallelGeometry(16, 12)
    sino = pyctrecon.Phantom.shepp_logan(6.0).sinogram(pg, [-1.0, 0.0, 1.0])  # (3, 12, 16)
    shape = pg.slice_shape(3)  # (3, 16, 16): larger than the sinograms
    buf = np.zeros(int(np.prod(shape)), np.float32)
    s2 = buf[:sino.size].reshape(sino.shape)
    s2[...] = sino
    with pytest.raises(ValueError, match="out shares memory with sinograms"):
        pyctrecon.fbp(s2, pg, out=buf.reshape(shape), ctx=cpu_ctx)
    with pytest.raises(ValueError, match="out shares memory with filtered"):
        pyctrecon.fbp_backproject(s2, pg, out=buf.reshape(shape), ctx=cpu_ctx)
    projections = np.ascontiguousarray(np.exp(-sino).transpose(1, 0, 2))  # (12, 3, 16)
    flat = np.ones((3, 16), np.float32)
    with pytest.raises(ValueError, match="out shares memory with projections"):
        big = np.zeros(int(np.prod(shape)) + projections.size, np.float32)
        pv = big[-projections.size:].reshape(projections.shape)
        pv[...] = projections
        pyctrecon.fbp_projections(pv, pg, flat, out=big[-int(np.prod(shape)):].reshape(shape),
                                  ctx=cpu_ctx)
    # in place is documented for the filters: the input copied first, then filtered
    f = pyctrecon.fbp_filter(sino, pg, ctx=cpu_ctx)
    s3 = sino.copy()
    assert pyctrecon.fbp_filter(s3, pg, out=s3, ctx=cpu_ctx) is s3 and s3.tobytes() == f.tobytes()
    system, phantom = pet
    h = pyctrecon.pet_simulate(system, phantom, events=2e4, ctx=cpu_ctx)
    pp = pyctrecon.PetProjector(system, ctx=cpu_ctx)
    x = np.ones(system.image_shape, np.float32)
    with pytest.raises(ValueError, match="out shares memory with image"):
        pp.forward(0, x, out=x)
    with pytest.raises(ValueError, match="out shares memory with histo_image"):
        pp.back(0, x, out=x)
    with pytest.raises(ValueError, match="out shares memory with image"):
        pyctrecon.pet_project_fft(system, 0, x, out=x, ctx=cpu_ctx)
    before = h.counts.copy()
    with pytest.raises(ValueError, match="out shares memory with histo.counts"):
        pyctrecon.pet_reconstruct(pp, h, iterations=1, out=h.counts[1])
    assert h.counts.tobytes() == before.tobytes()
