# A hand-written schedule for GMM-4 (1024 x 1024 x 1024 float32) on an AVX-512 CPU.
#  - An 8 x 32 tile of Z accumulates in registers: cache_write to a local tile that is written
#    back after the k loop; each k step is 8 broadcasts of X times two 16-wide vectors of Y,
#    i.e. 16 FMAs on 16 zmm accumulators.
#  - Y is packed per 32-column block (cache_read + compute_at): the micro-kernel then streams a
#    contiguous 1024 x 32 panel that stays in L2 while all row tiles of X pass by.
#  - Column blocks are outermost and run in parallel.
# Run: tyche run GMM-4 --trace examples/traces/gmm_1024.py
b0 = sch.get_block(name="Z")
b1 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope="local")
b2 = sch.cache_read(block=b0, read_buffer_index=1, storage_scope="global")
l3, l4, l5, l6 = sch.get_loops(block=b0)                   # b, i, j, k
l7, l8 = sch.split(loop=l4, factors=[None, 8])              # i0, i1
l9, l10, l11 = sch.split(loop=l5, factors=[None, 2, 16])    # j0, j1, j2
sch.reorder(l9, l7, l6, l8, l10, l11)                       # j0, i0, k, i1, j1, j2
sch.reverse_compute_at(block=b1, loop=l7)                   # write the tile back after k
sch.compute_at(block=b2, loop=l9)                           # pack Y's panel per column block
b12 = sch.decompose_reduction(block=b0, loop=l6)            # zero the tile before k
sch.parallel(loop=l9)
sch.unroll(loop=l8)
sch.unroll(loop=l10)
sch.vectorize(loop=l11)
