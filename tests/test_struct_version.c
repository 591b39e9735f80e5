/* The versioned-struct helpers of core/internal.h (ctr__struct_copy, _store,
 * _init, _check) on a made-up struct with three versions, the second of
 * which embeds an older, shorter version of another versioned struct (as
 * ctr_fdk_stream_options embeds ctr_fdk_options): every version's layout is
 * written out here as its own C struct, so the offsets the helpers compute
 * are checked against the compiler's. Then every descriptor of the public
 * API (ctr__structs) against the rules. */
#include "core/internal.h"
#include "harness.h"

#include <stddef.h>

/* The embedded struct: version 1 {version, y}, version 2 adds z. */
typedef struct inner_v1 {
  unsigned version;
  double y;
} inner_v1;
typedef struct inner {
  unsigned version;
  double y;
  int z;
} inner;

/* The outer struct: version 1 {version, in (inner v1), a}, version 2 the
 * same with inner v2 inside, version 3 adds b and c. */
typedef struct outer_v1 {
  unsigned version;
  inner_v1 in;
  double a;
} outer_v1;
typedef struct outer_v2 {
  unsigned version;
  inner in;
  double a;
} outer_v2;
typedef struct outer {
  unsigned version;
  inner in;
  double a;
  int b;
  double c;
} outer;

static const inner inner_defaults = {2, 1.5, 7};
static const ctr__struct_version inner_versions[] = {CTR__V_UPTO(inner, z), CTR__V_ALL(inner)};
static const ctr__struct_desc inner_desc = {
    "inner", sizeof(inner), _Alignof(inner), &inner_defaults, 2, inner_versions, 0,
    {0},     {NULL},        {NULL}};

static const outer outer_defaults = {3, {2, 1.5, 7}, -1.0, 11, 2.5};
static const ctr__struct_version outer_versions[] = {
    {offsetof(outer, b), {1}}, {offsetof(outer, b), {2}}, {sizeof(outer), {2}}};
static const ctr__struct_desc outer_desc = {
    "outer", sizeof(outer), _Alignof(outer), &outer_defaults, 3, outer_versions, 1,
    {offsetof(outer, in)}, {"in"}, {&inner_desc}};

/* A buffer bigger than any version, filled with a canary byte. */
typedef struct buffer {
  union {
    outer o;
    unsigned char bytes[sizeof(outer) + 32];
  } u;
} buffer;
static void fill(buffer *b) { memset(b->u.bytes, 0xA5, sizeof b->u.bytes); }
static int untouched_from(const buffer *b, size_t from) {
  for (size_t i = from; i < sizeof b->u.bytes; i++)
    if (b->u.bytes[i] != 0xA5) return 0;
  return 1;
}

static int same(const outer *a, const outer *b) {
  return a->version == b->version && a->in.version == b->in.version && a->in.y == b->in.y &&
         a->in.z == b->in.z && a->a == b->a && a->b == b->b && a->c == b->c;
}

static void test_descriptors(void) {
  CHECK_OK(ctr__struct_desc_check(&inner_desc));
  CHECK_OK(ctr__struct_desc_check(&outer_desc));
  /* a table that does not end at sizeof is refused */
  static const ctr__struct_version short_versions[] = {CTR__V_UPTO(inner, z)};
  ctr__struct_desc bad = inner_desc;
  bad.current = 1;
  bad.versions = short_versions;
  static const inner v1_defaults = {1, 1.5, 7};
  bad.defaults = &v1_defaults;
  CHECK_FAILS(ctr__struct_desc_check(&bad), CTR_E_INTERNAL, "current version ends at");
  int n = 0;
  for (const ctr__struct_desc *const *d = ctr__structs; *d; d++, n++) {
    ctr_status st = ctr__struct_desc_check(*d);
    CHECK_MSG(st == CTR_OK, "%s: %s", (*d)->name, ctr_error_detail());
  }
  printf("%d public versioned structs\n", n);
}

/* Reading each version from its own layout. */
static void test_copy(void) {
  outer o;
  const outer_v1 s1 = {1, {1, 4.0}, 8.0};
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, &s1));
  CHECK(o.version == 3 && o.in.version == 2 && o.in.y == 4.0 && o.in.z == 7 && o.a == 8.0 &&
        o.b == 11 && o.c == 2.5);
  const outer_v2 s2 = {2, {2, 5.0, 9}, 10.0};
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, &s2));
  CHECK(o.version == 3 && o.in.version == 2 && o.in.y == 5.0 && o.in.z == 9 && o.a == 10.0 &&
        o.b == 11 && o.c == 2.5);
  /* an embedded struct of an older version than the outer one holds: its
   * own members only */
  const outer_v2 s2old = {2, {1, 6.0, 99}, 12.0};
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, &s2old));
  CHECK(o.in.y == 6.0 && o.in.z == 7 && o.a == 12.0);
  const outer s3 = {3, {2, 1.0, 2}, 3.0, 4, 5.0};
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, &s3));
  CHECK(same(&o, &s3));
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, NULL));
  CHECK(o.version == 3 && o.in.y == 1.5 && o.a == -1.0 && o.c == 2.5);
  /* versions outside 1 .. current, the embedded one's too */
  outer_v1 bad = s1;
  bad.version = 0;
  CHECK_FAILS(ctr__struct_copy(&outer_desc, &o, &bad), CTR_E_INVALID_ARGUMENT,
              "outer.version is 0: this library accepts outer versions 1 to 3");
  bad.version = 4;
  CHECK_FAILS(ctr__struct_copy(&outer_desc, &o, &bad), CTR_E_INVALID_ARGUMENT,
              "outer.version is 4");
  bad.version = 1;
  bad.in.version = 2; /* outer version 1 holds inner version 1 */
  CHECK_FAILS(ctr__struct_copy(&outer_desc, &o, &bad), CTR_E_INVALID_ARGUMENT,
              "outer.in.version is 2: this library accepts inner versions 1 to 1");
  outer_v2 bad2 = s2;
  bad2.in.version = 0;
  CHECK_FAILS(ctr__struct_copy(&outer_desc, &o, &bad2), CTR_E_INVALID_ARGUMENT,
              "outer.in.version is 0");
}

/* Writing each version into its own layout, and not a byte beyond it. */
static void test_store_and_init(void) {
  const outer full = {3, {2, 4.0, 5}, 6.0, 7, 8.0};
  buffer b;
  fill(&b);
  b.u.o.version = 1;
  CHECK_OK(ctr__struct_store(&outer_desc, &b.u.o, &full));
  const outer_v1 *o1 = (const outer_v1 *)&b.u.o;
  CHECK(o1->version == 1 && o1->in.version == 1 && o1->in.y == 4.0 && o1->a == 6.0);
  CHECK(untouched_from(&b, sizeof(outer_v1)));
  fill(&b);
  b.u.o.version = 2;
  CHECK_OK(ctr__struct_store(&outer_desc, &b.u.o, &full));
  const outer_v2 *o2 = (const outer_v2 *)&b.u.o;
  CHECK(o2->version == 2 && o2->in.version == 2 && o2->in.y == 4.0 && o2->in.z == 5 &&
        o2->a == 6.0);
  CHECK(untouched_from(&b, offsetof(outer_v2, a) + sizeof(double)));
  fill(&b);
  b.u.o.version = 3;
  CHECK_OK(ctr__struct_store(&outer_desc, &b.u.o, &full));
  CHECK(b.u.o.b == 7 && b.u.o.c == 8.0 && b.u.o.in.z == 5);
  CHECK(untouched_from(&b, sizeof(outer)));
  fill(&b);
  CHECK_FAILS(ctr__struct_store(&outer_desc, &b.u.o, &full), CTR_E_INVALID_ARGUMENT,
              "outer.version is 2779096485");
  CHECK_FAILS(ctr__struct_check(&outer_desc, NULL), CTR_E_INVALID_ARGUMENT, "outer is NULL");

  /* init: the defaults in each version's layout */
  fill(&b);
  CHECK_OK(ctr__struct_init(&outer_desc, &b.u.o, 1));
  CHECK(o1->version == 1 && o1->in.version == 1 && o1->in.y == 1.5 && o1->a == -1.0);
  CHECK(untouched_from(&b, sizeof(outer_v1)));
  fill(&b);
  CHECK_OK(ctr__struct_init(&outer_desc, &b.u.o, 2));
  CHECK(o2->version == 2 && o2->in.version == 2 && o2->in.z == 7 && o2->a == -1.0);
  fill(&b);
  CHECK_OK(ctr__struct_init(&outer_desc, &b.u.o, 3));
  CHECK(same(&b.u.o, &outer_defaults));
  CHECK_FAILS(ctr__struct_init(&outer_desc, &b.u.o, 0), CTR_E_INVALID_ARGUMENT,
              "outer_init: version 0, this library accepts outer versions 1 to 3");
  CHECK_FAILS(ctr__struct_init(&outer_desc, &b.u.o, 4), CTR_E_INVALID_ARGUMENT, "version 4");
  CHECK_FAILS(ctr__struct_init(&outer_desc, NULL, 1), CTR_E_INVALID_ARGUMENT, "NULL");
  /* what init wrote reads back as the defaults */
  outer o;
  fill(&b);
  CHECK_OK(ctr__struct_init(&outer_desc, &b.u.o, 1));
  CHECK_OK(ctr__struct_copy(&outer_desc, &o, &b.u.o));
  CHECK(same(&o, &outer_defaults));
}

int main(void) {
  test_descriptors();
  test_copy();
  test_store_and_init();
  return th_finish("test_struct_version");
}
