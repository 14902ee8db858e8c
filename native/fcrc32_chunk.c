/*
 * The compiled chunk loop of ibdtool's scans over MariaDB full_crc32 page_compressed zlib
 * images (FORMATS.md §3.2, §6.6): for every page of a chunk read in one piece, whether its
 * CRC-32C verifies and, if so, the first bytes of the page inside (one inflate with the output
 * bounded to them) unpacked into columns. Built by scripts/setup.sh into
 * parsers/_native/libfcrc32_chunk.so and called through ctypes by
 * parsers/fcrc32_native.py, which documents the contract; the Python path
 * (ibdtool.tablespace.inspect_tally.compressed_headers) stays the reference the tests compare
 * this with, column by column. No Python.h: any CPython loads it.
 *
 * The bytes are hostile input: every read is inside the page it belongs to (the image's size,
 * checked against the page size, bounds the CRC and the inflate's input), the inflate writes
 * into a fixed buffer of the header's length, and nothing is allocated per page (one z_stream
 * a call, reset page after page). A page that is anything but the common case is marked not
 * ok, for the Python decoder to judge and word.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

/* Bumped whenever a signature or a meaning below changes: the loader refuses any other. */
#define FCRC32_ABI 1

#define POLY 0x82f63b78u /* CRC-32C (Castagnoli), reflected */
#define SHORT_BLOCK 256  /* the three interleaved streams of the SSE4.2 path, bytes each */
#define MAX_PREFIX 256   /* the longest header prefix a call may ask for */

#define MARKER 0x8000u    /* FIL_PAGE_TYPE bit 15: a page_compressed image (§3.2) */
#define SIZE_UNITS 0x7fffu /* its low 15 bits: the image size in 256-byte units */
#define SIZE_SHIFT 8
#define MIN_STORED 256u   /* the smallest image */
#define PAYLOAD_AT 26u    /* the zlib stream starts after the 26-byte header (§3.2) */

static uint32_t crc_table[8][256];     /* slicing-by-8, for CPUs without SSE4.2 */
static uint32_t crc_short[4][256];     /* appends SHORT_BLOCK zero bytes to a CRC */
static int have_sse42;

/* --- CRC-32C ---------------------------------------------------------------------------- */

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = gf2_times(mat, mat[n]);
}

/* The operator appending len zero bytes to a CRC (len a power of two), as four byte tables
 * (Mark Adler's construction, crc32c.c, zlib licence). */
static void zeros_tables(uint32_t zeros[4][256], size_t len)
{
    uint32_t even[32], odd[32];
    odd[0] = POLY; /* one zero bit */
    uint32_t row = 1;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); /* two zero bits */
    gf2_square(odd, even); /* four */
    const uint32_t *op = odd;
    do {
        gf2_square(even, odd);
        len >>= 1;
        op = even;
        if (len == 0)
            break;
        gf2_square(odd, even);
        len >>= 1;
        op = odd;
    } while (len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(op, n);
        zeros[1][n] = gf2_times(op, n << 8);
        zeros[2][n] = gf2_times(op, n << 16);
        zeros[3][n] = gf2_times(op, n << 24);
    }
}

static inline uint32_t shift_short(uint32_t crc)
{
    return crc_short[0][crc & 0xff] ^ crc_short[1][(crc >> 8) & 0xff] ^
           crc_short[2][(crc >> 16) & 0xff] ^ crc_short[3][crc >> 24];
}

__attribute__((constructor)) static void fcrc32_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc_table[0][c & 0xff] ^ (c >> 8);
            crc_table[k][n] = c;
        }
    }
    zeros_tables(crc_short, SHORT_BLOCK);
#ifdef HAVE_SSE42_PATH
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2") != 0;
#endif
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian hosts: the table path below reads it so */
}

static uint32_t crc32c_table(uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (len >= 8) {
        uint64_t v = load64(p) ^ crc;
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
              crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
              crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
              crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
        p += 8;
        len -= 8;
    }
#endif
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#ifdef HAVE_SSE42_PATH
/* Three independent crc32 instructions over three SHORT_BLOCKs (the instruction's latency is
 * three times its throughput), joined by shifting each CRC past the blocks after it. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc,
                                                               const unsigned char *p,
                                                               size_t len)
{
    uint64_t c0 = ~crc & 0xffffffffu;
    while (len && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        len--;
    }
    while (len >= 3 * SHORT_BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + SHORT_BLOCK;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + SHORT_BLOCK));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * SHORT_BLOCK));
            p += 8;
        } while (p < end);
        c0 = shift_short((uint32_t)c0) ^ c1;
        c0 = shift_short((uint32_t)c0) ^ c2;
        p += 2 * SHORT_BLOCK;
        len -= 3 * SHORT_BLOCK;
    }
    while (len >= 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        p += 8;
        len -= 8;
    }
    while (len--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return ~(uint32_t)c0;
}
#endif

static inline uint32_t crc32c(const unsigned char *p, size_t len)
{
#ifdef HAVE_SSE42_PATH
    if (have_sse42)
        return crc32c_sse42(0, p, len);
#endif
    return crc32c_table(0, p, len);
}

/* --- the exported calls ------------------------------------------------------------------ */

int fcrc32_abi(void)
{
    return FCRC32_ABI;
}

#ifndef FCRC32_SOURCE
#define FCRC32_SOURCE "unknown"
#endif

/* The SHA-256 of this file the build was made from (scripts/build_native.sh passes it): the
 * tests compare it with the source as it is, to say when the library needs building again. */
const char *fcrc32_source(void)
{
    return FCRC32_SOURCE;
}

/* Which CRC-32C path fcrc32_chunk takes: 1 with SSE4.2, 0 with the table. */
int fcrc32_uses_sse42(void)
{
    return have_sse42;
}

/* CRC-32C of buf (mode 0: the path fcrc32_chunk takes; 1: the table; 2: SSE4.2, or -1 in
 * *ok when the CPU lacks it), for the tests to compare both with the crc32c package. */
uint32_t fcrc32_crc32c(const unsigned char *buf, size_t len, int mode, int *ok)
{
    *ok = 0;
    if (mode == 1)
        return crc32c_table(0, buf, len);
#ifdef HAVE_SSE42_PATH
    if (mode == 2 && have_sse42)
        return crc32c_sse42(0, buf, len);
#endif
    if (mode == 2) {
        *ok = -1;
        return 0;
    }
    return crc32c(buf, len);
}

static inline uint32_t be16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * For each of the count pages of chunk (psize bytes each, page numbers first_page, …):
 *   status[k]    1 when the page is a full_crc32 page_compressed image at its own page
 *                number, key version 0, with a valid size, whose non-zero stored CRC-32C
 *                (last 4 bytes of the image) is the CRC-32C of the rest of the image, and whose
 *                zlib payload (from byte 26 to the image's end) gives prefix_len bytes in one
 *                inflate(Z_SYNC_FLUSH) call with exactly that much room, as Python's
 *                zlib.decompressobj().decompress(payload, prefix_len) does, without an error;
 *                0 for anything else (the caller's decoder says what it is). With prefix_len
 *                0, the CRC-32C verdict alone (the image's algorithm may be any; nothing is
 *                inflated, no field read, payload[k] stays 0).
 *   marked[k]    1 when the stored page type has the page_compressed marker (bit 15)
 *   stored[k]    the stored page type (FIL_PAGE_TYPE)
 *   sizes[k]     the image's stored size, payload[k] its payload length (0 where not ok)
 *   cols[f * count + k]  field f of the inflated prefix: a big-endian unsigned integer of
 *                widths[f] bytes (1, 2, 4 or 8) at offsets[f] (0 where not ok)
 * Returns the number of pages ok, or -1 when the arguments are out of range (nothing written
 * then), -2 when zlib cannot be set up.
 */
long fcrc32_chunk(const unsigned char *chunk, size_t chunk_len, uint32_t psize, uint64_t first_page,
                  uint32_t count, uint32_t prefix_len, uint32_t nfields, const uint16_t *offsets,
                  const uint8_t *widths, uint8_t *status, uint8_t *marked, uint16_t *stored,
                  uint32_t *sizes, uint32_t *payload, uint64_t *cols)
{
    if (psize < 1024 || psize > 65536 || prefix_len > MAX_PREFIX ||
        (uint64_t)count * psize > chunk_len || nfields > 64 || (prefix_len == 0 && nfields))
        return -1;
    for (uint32_t f = 0; f < nfields; f++) {
        unsigned w = widths[f];
        if ((w != 1 && w != 2 && w != 4 && w != 8) || (uint32_t)offsets[f] + w > prefix_len)
            return -1;
    }
    memset(status, 0, count);
    memset(marked, 0, count);
    memset(stored, 0, (size_t)count * sizeof *stored);
    memset(sizes, 0, (size_t)count * sizeof *sizes);
    memset(payload, 0, (size_t)count * sizeof *payload);
    if (nfields)
        memset(cols, 0, (size_t)count * nfields * sizeof *cols);

    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (prefix_len && inflateInit2(&zs, MAX_WBITS) != Z_OK) /* zlib.decompressobj()'s */
        return -2;
    unsigned char head[MAX_PREFIX];
    long good = 0;
    for (uint32_t k = 0; k < count; k++) {
        const unsigned char *page = chunk + (size_t)k * psize;
        uint32_t type = be16(page + 24);
        stored[k] = (uint16_t)type;
        if (!(type & MARKER))
            continue;
        marked[k] = 1;
        if (be32(page) != 0 || be32(page + 4) != first_page + k)
            continue; /* encrypted (a key version), or not this page */
        uint32_t size = (type & SIZE_UNITS) << SIZE_SHIFT;
        if (size < MIN_STORED || size >= psize)
            continue;
        uint32_t crc = be32(page + size - 4);
        if (crc == 0 || crc != crc32c(page, size - 4))
            continue;
        if (prefix_len == 0) { /* the CRC-32C verdict alone: any algorithm */
            status[k] = 1;
            sizes[k] = size;
            good++;
            continue;
        }
        if (inflateReset(&zs) != Z_OK)
            continue;
        zs.next_in = (unsigned char *)(page + PAYLOAD_AT);
        zs.avail_in = size - PAYLOAD_AT;
        zs.next_out = head;
        zs.avail_out = prefix_len;
        int rc = inflate(&zs, Z_SYNC_FLUSH);
        if ((rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) || zs.avail_out != 0)
            continue;
        status[k] = 1;
        sizes[k] = size;
        payload[k] = size - PAYLOAD_AT;
        for (uint32_t f = 0; f < nfields; f++) {
            const unsigned char *at = head + offsets[f];
            uint64_t v = 0;
            for (unsigned b = 0; b < widths[f]; b++)
                v = v << 8 | at[b];
            cols[(size_t)f * count + k] = v;
        }
        good++;
    }
    if (prefix_len)
        inflateEnd(&zs);
    return good;
}
