/* qkv.kernels._tile.h: included by _fused.c (after struct flash_task, flash_block and the
 * softmax loops). tile_block(t, b) computes one key block of a query block's walk exactly as
 * flash_block_blas does (same meaning of every field; see _fused.c), or returns 0 to leave it to
 * flash_block_blas. This version handles nothing yet. */

static int tile_block(const struct flash_task *t, const struct flash_block *b)
{
    (void)t;
    (void)b;
    return 0;
}
