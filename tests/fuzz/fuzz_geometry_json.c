/* Geometry JSON (docs/geometry.md): ctr_geometry_from_json_string, the parser
 * behind ctr_geometry_load_json, then what `ctrecon geometry --check` does
 * with a geometry that loads: the coverage summary and writing it back. */
#include "fuzz_util.h"

#include <ctrecon.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fz_text(data, size);
  ctr_geometry *g = NULL;
  if (ctr_geometry_from_json_string(text, "fuzz.json", &g) == CTR_OK) {
    (void)ctr_geometry_coverage(g);
    (void)ctr_geometry_is_circular(g);
    char *json = NULL;
    if (ctr_geometry_to_json_string(g, &json) == CTR_OK) free(json);
    ctr_geometry_free(g);
  }
  free(text);
  return 0;
}
