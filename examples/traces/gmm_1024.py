# A hand-written schedule for GMM-4 (1024 x 1024 x 1024 float32) on an AVX-512 CPU (32 zmm
# registers of 16 floats); gmm_1024_avx2.py is the one for AVX2 CPUs.
#  - An 8 x 32 tile of Z accumulates in registers: cache_write to a local tile that is written
#    back after the k loop; each k step is 8 broadcasts of X times two 16-wide vectors of Y,
#    i.e. 16 FMAs on 16 zmm accumulators.
#  - Y is packed per 128-column block (cache_read + compute_at): the micro-kernel streams a
#    contiguous panel that stays in L2 while the row tiles of X pass by.
#  - Each 8-row tile of X (32 KB) serves the four 32-column tiles of a block while it is in L1,
#    which quarters the traffic of X from the shared last-level cache.
#  - Column blocks are outermost and run in parallel.
# Run: tyche run GMM-4 --trace examples/traces/gmm_1024.py
b0 = sch.get_block(name="Z")
b1 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="local")
b2 = sch.cache_read(block=b0, read_buffer_index=1, storage_scope="global")
l3, l4, l5, l6 = sch.get_loops(block=b0)                   # b, i, j, k
l7, l8 = sch.split(loop=l4, factors=[None, 8])              # i0, i1
l9, l10, l11, l12 = sch.split(loop=l5, factors=[None, 4, 2, 16])  # j0, j1, j2, j3
sch.reorder(l9, l7, l10, l6, l8, l11, l12)                  # j0, i0, j1, k, i1, j2, j3
sch.reverse_compute_at(block=b1, loop=l10)                  # write the tile back after k
sch.compute_at(block=b2, loop=l9)                           # pack Y's panel per column block
b13 = sch.decompose_reduction(block=b0, loop=l6)            # zero the tile before k
sch.parallel(loop=l9)
sch.unroll(loop=l8)
sch.unroll(loop=l11)
sch.vectorize(loop=l12)
