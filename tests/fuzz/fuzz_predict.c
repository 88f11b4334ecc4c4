/* The libFuzzer harness of the predicted event encoding's decoder (common/predict.c): each input
 * is a count (its first two bytes, below 4096) and the bytes of one block. Whatever decodes is
 * encoded again and must decode to the same events, so the fuzzer finds a decoder and an encoder
 * that disagree as well as crashes and reads out of bounds. Through tracedecode (fuzz_decode.c)
 * a block is reached a few times a second; here, many thousand. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "at_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint32_t count = (uint32_t)(data[0] | data[1] << 8) % 4096;
    struct at_event *out = malloc((count + 1) * sizeof *out);
    struct at_event *back = malloc((count + 1) * sizeof *back);
    uint8_t *again = malloc(at_events_encode_bound(count) + 1);
    if (out && back && again && at_events_unpredict(data + 2, size - 2, count, out) == 0) {
        struct at_block_info info;
        size_t n = at_events_predict(out, count, again, &info);
        if (info.count != count || at_events_unpredict(again, n, count, back) != 0 ||
            memcmp(back, out, count * sizeof *back) != 0)
            abort();
    }
    free(out);
    free(back);
    free(again);
    return 0;
}
