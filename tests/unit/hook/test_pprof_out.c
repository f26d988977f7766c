/* The heap profile writer (worker-hook/ruby/ext/memdiag_hook/pprof_out.c):
 * what it encodes decodes with protobuf-c as pprof's format says (string 0
 * empty, sample types, leaf-first locations, per-sample labels), and its
 * gzip inflates back to the same bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "pprof_out.h"
#include "profile.pb-c.h"

static const char *str(const Memdiag__Pprof__Profile *p, int64_t i)
{
  assert_true(i >= 0 && (size_t)i < p->n_string_table);
  return p->string_table[i];
}

static const Memdiag__Pprof__Location *loc(const Memdiag__Pprof__Profile *p, uint64_t id)
{
  for(size_t i = 0; i < p->n_location; i++)
    if(p->location[i]->id == id)
      return p->location[i];
  fail_msg("no location %llu", (unsigned long long)id);
  return NULL;
}

static const Memdiag__Pprof__Function *func(const Memdiag__Pprof__Profile *p, uint64_t id)
{
  for(size_t i = 0; i < p->n_function; i++)
    if(p->function[i]->id == id)
      return p->function[i];
  fail_msg("no function %llu", (unsigned long long)id);
  return NULL;
}

static int64_t num_label(const Memdiag__Pprof__Profile *p, const Memdiag__Pprof__Sample *s,
                         const char *key)
{
  for(size_t i = 0; i < s->n_label; i++)
    if(!strcmp(str(p, s->label[i]->key), key))
      return s->label[i]->num;
  fail_msg("no label %s", key);
  return 0;
}

static void profile_decodes_as_pprof(void **state)
{
  mdh_stab *t = mdh_stab_new();
  mdh_stab_frame leak[2] = {{"app.rb", 6, "leak", 4, 12}, {"app.rb", 6, "<main>", 6, 30}};
  uint32_t site, klass;
  mdh_pprof_sample samples[2];
  uint8_t *raw, *gz, back[4096];
  size_t raw_len, gz_len;
  Memdiag__Pprof__Profile *p;
  const Memdiag__Pprof__Location *l;
  z_stream z;

  (void)state;
  assert_int_equal(mdh_stab_site(t, leak, 2, &site), 0);
  assert_int_equal(mdh_stab_intern(t, "String", 6, &klass), 0);
  samples[0] = (mdh_pprof_sample){site, klass, 4096, 4096 * 1040, 0x7f00aa00, 17};
  samples[1] = (mdh_pprof_sample){site, klass, 4096, 4096 * 40, 0x7f00bb00, 18};
  {
    mdh_pprof_input in = {t, samples, 2, 4096, 1700000000000000000, "memdiag test"};
    assert_int_equal(mdh_pprof_encode(&in, &raw, &raw_len), 0);
  }
  p = memdiag__pprof__profile__unpack(NULL, raw_len, raw);
  assert_non_null(p);
  assert_string_equal(p->string_table[0], "");
  assert_int_equal(p->n_sample_type, 2);
  assert_string_equal(str(p, p->sample_type[0]->type), "inuse_objects");
  assert_string_equal(str(p, p->sample_type[0]->unit), "count");
  assert_string_equal(str(p, p->sample_type[1]->type), "inuse_space");
  assert_string_equal(str(p, p->sample_type[1]->unit), "bytes");
  assert_string_equal(str(p, p->default_sample_type), "inuse_space");
  assert_int_equal(p->period, 4096);
  assert_int_equal(p->time_nanos, 1700000000000000000);
  assert_int_equal(p->n_comment, 1);
  assert_string_equal(str(p, p->comment[0]), "memdiag test");
  assert_int_equal(p->n_sample, 2);
  assert_int_equal(p->sample[0]->n_value, 2);
  assert_int_equal(p->sample[0]->value[0], 4096);
  assert_int_equal(p->sample[0]->value[1], 4096 * 1040);
  assert_int_equal(num_label(p, p->sample[0], "address"), 0x7f00aa00);
  assert_int_equal(num_label(p, p->sample[1], "generation"), 18);
  assert_string_equal(str(p, p->sample[0]->label[0]->str), "String");
  assert_int_equal(p->sample[0]->n_location_id, 2);
  l = loc(p, p->sample[0]->location_id[0]); /* the leaf */
  assert_int_equal(l->n_line, 1);
  assert_int_equal(l->line[0]->line, 12);
  assert_string_equal(str(p, func(p, l->line[0]->function_id)->name), "leak");
  assert_string_equal(str(p, func(p, l->line[0]->function_id)->filename), "app.rb");
  l = loc(p, p->sample[0]->location_id[1]);
  assert_string_equal(str(p, func(p, l->line[0]->function_id)->name), "<main>");
  memdiag__pprof__profile__free_unpacked(p, NULL);

  assert_int_equal(mdh_pprof_gzip(raw, raw_len, &gz, &gz_len), 0);
  assert_true(gz_len > 10 && gz[0] == 0x1f && gz[1] == 0x8b);
  memset(&z, 0, sizeof z);
  assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = gz;
  z.avail_in = (uInt)gz_len;
  z.next_out = back;
  z.avail_out = sizeof back;
  assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
  assert_int_equal(z.total_out, raw_len);
  assert_memory_equal(back, raw, raw_len);
  inflateEnd(&z);
  free(gz);
  free(raw);
  mdh_stab_free(t);
}

static void a_sample_naming_no_site_is_refused(void **state)
{
  mdh_stab *t = mdh_stab_new();
  mdh_pprof_sample bad = {5, 0, 1, 1, 0x10, 1};
  uint8_t *raw;
  size_t len;
  uint32_t id;
  (void)state;
  assert_int_equal(mdh_stab_intern(t, "String", 6, &id), 0);
  {
    mdh_pprof_input in = {t, &bad, 1, 1, 0, NULL};
    assert_int_equal(mdh_pprof_encode(&in, &raw, &len), -EINVAL);
  }
  assert_null(raw);
  mdh_stab_free(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(profile_decodes_as_pprof),
      cmocka_unit_test(a_sample_naming_no_site_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
