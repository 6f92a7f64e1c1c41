# A hand-written schedule for GMM (Z[b, i, j] += X[b, i, k] * Y[b, k, j]) in Tyche's trace text
# form. Try it: tyche check GMM-4 --trace examples/traces/gmm_tiled.py --scale-down
b0 = sch.get_block(name="Z")
l1, l2, l3, l4 = sch.get_loops(block=b0)
l5, l6 = sch.split(loop=l2, factors=[None, 8])    # i: 8-row tiles
l7, l8 = sch.split(loop=l3, factors=[None, 16])   # j: 16 columns, one AVX-512 vector of float32
l9, l10 = sch.split(loop=l4, factors=[None, 4])   # k
sch.reorder(l5, l7, l9, l10, l6, l8)
sch.parallel(loop=l5)
sch.vectorize(loop=l8)
