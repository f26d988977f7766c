/* Fuzz target for the <Plugin memdiag> block: plugin/config.c, which hands
 * keys on to the detector (detector_config.c) and capture
 * (capture/capture_config.c) parsers. collectd's own parser is not under
 * test, so the input is read as a config block the simple way, one item
 * per line ("Key value value ..."): a token in double quotes is a string,
 * true/false a boolean, a token that strtod takes whole a number, anything
 * else an unquoted string. The corpus is readable configuration. Every
 * input must be applied and checked without a crash or a leak, whatever
 * it says; errors are expected (the plugin logs them and refuses to start). */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "liboconfig/oconfig.h"

#include "config.h"

#define MAX_ITEMS  64
#define MAX_VALUES 8
#define MAX_TEXT   4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* collectd's logger: the plugin only calls it to report errors. The text
 * is formatted, so format bugs in the messages are exercised too. */
void plugin_log(int level, const char *format, ...)
{
  char buf[1024];
  va_list ap;
  (void)level;
  va_start(ap, format);
  vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
}

/* One token of line at *pos, copied into its own allocation. */
static int next_token(const char *line, size_t len, size_t *pos, oconfig_value_t *v)
{
  size_t i = *pos, start, end;
  char *text, *num_end;

  while(i < len && (line[i] == ' ' || line[i] == '\t'))
    i++;
  if(i >= len)
    return 0;
  if(line[i] == '"') {
    start = ++i;
    while(i < len && line[i] != '"')
      i++;
    end = i;
    if(i < len)
      i++;
    v->type = OCONFIG_TYPE_STRING;
  } else {
    start = i;
    while(i < len && line[i] != ' ' && line[i] != '\t')
      i++;
    end = i;
    v->type = -1;
  }
  *pos = i;
  text = strndup(line + start, end - start);
  if(!text)
    return -1;
  if(v->type == OCONFIG_TYPE_STRING) {
    v->value.string = text;
    return 1;
  }
  if(strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
    v->type = OCONFIG_TYPE_BOOLEAN;
    v->value.boolean = text[0] == 't';
    free(text);
    return 1;
  }
  v->value.number = strtod(text, &num_end);
  if(*text && *num_end == '\0') {
    v->type = OCONFIG_TYPE_NUMBER;
    free(text);
    return 1;
  }
  v->type = OCONFIG_TYPE_STRING;
  v->value.string = text;
  return 1;
}

static void free_items(oconfig_item_t *items, int n)
{
  for(int i = 0; i < n; i++) {
    for(int k = 0; k < items[i].values_num; k++)
      if(items[i].values[k].type == OCONFIG_TYPE_STRING)
        free(items[i].values[k].value.string);
    free(items[i].values);
    free(items[i].key);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  oconfig_item_t block = {.key = "Plugin"}, items[MAX_ITEMS];
  char text[MAX_TEXT + 1];
  size_t off = 0;
  int n = 0;
  mdp_config cfg;

  if(size > MAX_TEXT)
    size = MAX_TEXT;
  memcpy(text, data, size);
  text[size] = '\0'; /* a NUL inside ends the line there, as C strings do */
  memset(items, 0, sizeof items);

  while(off < size && n < MAX_ITEMS) {
    size_t eol = off, pos = 0;
    oconfig_value_t tok;
    oconfig_item_t *it = &items[n];

    while(eol < size && text[eol] != '\n')
      eol++;
    /* the key: first token, whatever its type */
    if(next_token(text + off, eol - off, &pos, &tok) == 1) {
      if(tok.type == OCONFIG_TYPE_STRING)
        it->key = tok.value.string;
      else
        it->key = strndup(text + off, pos);
      it->values = calloc(MAX_VALUES, sizeof *it->values);
      it->parent = &block;
      if(!it->key || !it->values) {
        free(it->key);
        free(it->values);
        it->key = NULL;
        it->values = NULL;
      } else {
        while(it->values_num < MAX_VALUES &&
              next_token(text + off, eol - off, &pos, &it->values[it->values_num]) == 1)
          it->values_num++;
        n++;
      }
    }
    off = eol + 1;
  }

  block.children = items;
  block.children_num = n;
  mdp_config_init(&cfg);
  if(mdp_config_apply(&cfg, &block) == 0)
    mdp_config_check(&cfg);
  mdp_config_free(&cfg);
  free_items(items, n);
  return 0;
}
