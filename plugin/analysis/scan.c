/* Heap-dump line scanner; see scan.h. */
#include <stdlib.h>
#include <string.h>

#include "scan.h"

static const char *const type_names[MDP_T_COUNT] = {
    "UNKNOWN", "OBJECT", "CLASS",  "MODULE", "FLOAT", "STRING",  "REGEXP",   "ARRAY",  "HASH",
    "STRUCT",  "BIGNUM", "FILE",   "DATA",   "MATCH", "COMPLEX", "RATIONAL", "SYMBOL", "IMEMO",
    "NODE",    "ICLASS", "ZOMBIE", "MOVED",  "NONE",  "ROOT",    "SHAPE",
};

const char *mdp_analysis_type_name(unsigned type)
{
  return type < MDP_T_COUNT ? type_names[type] : type_names[0];
}

static uint8_t type_of(const char *s, size_t n)
{
  for(unsigned t = 1; t < MDP_T_COUNT; t++)
    if(type_names[t][0] == s[0] && strlen(type_names[t]) == n && memcmp(type_names[t], s, n) == 0)
      return (uint8_t)t;
  return MDP_T_UNKNOWN;
}

typedef struct {
  const char *p, *e;
  int partial; /* a long line's head: running off its end is no error */
  const char *why;
} cur;

#define WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\r')

static void skip_ws(cur *c)
{
  while(c->p < c->e && WS(*c->p))
    c->p++;
}

/* At an opening quote: leaves p after the closing one; *s and *n get the
 * content. Returns 0, 1 when a partial line ends inside, -1 when broken. */
static int str(cur *c, const char **s, size_t *n)
{
  const char *q = c->p + 1;

  for(;;) {
    const char *end = memchr(q, '"', (size_t)(c->e - q));
    if(!end) {
      *s = c->p + 1;
      *n = (size_t)(c->e - *s);
      if(c->partial)
        return 1;
      c->why = "unterminated string";
      return -1;
    }
    size_t bs = 0;
    while(end - bs > c->p + 1 && end[-1 - (ptrdiff_t)bs] == '\\')
      bs++;
    if(bs % 2 == 0) {
      *s = c->p + 1;
      *n = (size_t)(end - *s);
      c->p = end + 1;
      return 0;
    }
    q = end + 1;
  }
}

static int hex_addr(const char *s, size_t n, uint64_t *out)
{
  uint64_t v = 0;
  if(n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
    return -1;
  for(size_t i = 2; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    unsigned d;
    if(ch >= '0' && ch <= '9')
      d = ch - '0';
    else if(ch >= 'a' && ch <= 'f')
      d = ch - 'a' + 10;
    else if(ch >= 'A' && ch <= 'F')
      d = ch - 'A' + 10;
    else
      return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

/* An unsigned decimal; returns 0, 1 when a partial line ends, -1. */
static int number(cur *c, uint64_t *out)
{
  uint64_t v = 0;
  const char *s = c->p;
  if(c->p < c->e && *c->p == '-')
    c->p++;
  while(c->p < c->e && *c->p >= '0' && *c->p <= '9') {
    unsigned d = (unsigned)(*c->p - '0');
    if(v > (UINT64_MAX - d) / 10) {
      c->why = "number too large";
      return -1;
    }
    v = v * 10 + d;
    c->p++;
  }
  while(c->p < c->e && (*c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == '+' ||
                        *c->p == '-' || (*c->p >= '0' && *c->p <= '9')))
    c->p++;
  if(c->p == s || (*s == '-' && c->p == s + 1)) {
    if(c->p == c->e && c->partial)
      return 1;
    c->why = "bad value";
    return -1;
  }
  *out = *s == '-' ? 0 : v;
  return 0;
}

/* Skips any JSON value. Returns 0, 1 (partial line ended), -1. */
static int skip_value(cur *c)
{
  char stack[32];
  int depth = 0;
  const char *s;
  size_t n;
  int rc;

  do {
    skip_ws(c);
    if(c->p >= c->e)
      goto ran_out;
    switch(*c->p) {
    case '"':
      if((rc = str(c, &s, &n)) != 0)
        return rc;
      break;
    case '{':
    case '[':
      if(depth == (int)sizeof(stack)) {
        c->why = "nested too deeply";
        return -1;
      }
      stack[depth++] = *c->p == '{' ? '}' : ']';
      c->p++;
      continue;
    case '}':
    case ']':
      if(!depth || stack[depth - 1] != *c->p) {
        c->why = "unbalanced brackets";
        return -1;
      }
      depth--;
      c->p++;
      break;
    case ',':
    case ':':
      if(!depth) {
        c->why = "missing value";
        return -1;
      }
      c->p++;
      continue;
    case 't':
    case 'f':
    case 'n': {
      size_t want = *c->p == 'f' ? 5 : 4;
      const char *lit = *c->p == 't' ? "true" : *c->p == 'f' ? "false" : "null";
      if((size_t)(c->e - c->p) < want) {
        if(c->partial)
          return 1;
        c->why = "bad literal";
        return -1;
      }
      if(memcmp(c->p, lit, want) != 0) {
        c->why = "bad literal";
        return -1;
      }
      c->p += want;
      break;
    }
    default: {
      uint64_t v;
      if((rc = number(c, &v)) != 0)
        return rc;
    }
    }
  } while(depth);
  return 0;
ran_out:
  if(c->partial)
    return 1;
  c->why = depth ? "unterminated array or object" : "missing value";
  return -1;
}

static int str_value(cur *c, const char **s, size_t *n)
{
  skip_ws(c);
  if(c->p >= c->e)
    return c->partial ? 1 : (c->why = "missing value", -1);
  if(*c->p != '"') {
    c->why = "a string was expected";
    return -1;
  }
  return str(c, s, n);
}

/* A string holding a hexadecimal address (0 only where zero_ok); why
 * names the field when it is not one. */
/* Whether an address of 0 is one (a class address may be 0: none). */
typedef enum { ADDR_NONZERO, ADDR_ZERO_OK } addr_rule;

static int addr_value(cur *c, uint64_t *out, addr_rule rule, const char *why)
{
  const char *s;
  size_t n;
  int rc = str_value(c, &s, &n);

  if(rc != 0)
    return rc;
  if(hex_addr(s, n, out) || (rule == ADDR_NONZERO && !*out)) {
    c->why = why;
    return -1;
  }
  return 0;
}

static int num_value(cur *c, uint64_t *v)
{
  skip_ws(c);
  return number(c, v);
}

/* A number kept in 32 bits (larger ones are capped); *has is set once
 * it is read. */
static int u32_value(cur *c, uint32_t *out, uint8_t *has)
{
  uint64_t v;
  int rc = num_value(c, &v);

  if(rc != 0)
    return rc;
  *out = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  *has = 1;
  return 0;
}

/* "flags":{"old":true, "pinned":true, ...}: anything else is skipped. */
static int flags(cur *c, mdp_analysis_obj *o)
{
  const char *start = c->p;
  skip_ws(c);
  if(c->p >= c->e || *c->p != '{')
    return skip_value(c);
  c->p++;
  for(;;) {
    const char *k;
    size_t kn;
    skip_ws(c);
    if(c->p + 6 > c->e || *c->p != '"' || str(c, &k, &kn) || c->p >= c->e || *c->p != ':')
      break;
    c->p++;
    if(c->p + 4 > c->e || memcmp(c->p, "true", 4) != 0)
      break;
    c->p += 4;
    if(kn == 3 && memcmp(k, "old", 3) == 0)
      o->old = 1;
    else if(kn == 6 && memcmp(k, "pinned", 6) == 0)
      o->pinned = 1;
    if(c->p < c->e && *c->p == ',') {
      c->p++;
      continue;
    }
    if(c->p < c->e && *c->p == '}') {
      c->p++;
      return 0;
    }
    break;
  }
  /* Not the usual shape: start over with the general parser. */
  c->p = start;
  o->old = o->pinned = 0;
  return skip_value(c);
}

/* Characters of a references array: quoted hex addresses. */
static const unsigned char ref_char[256] = {
    [' '] = 1, ['"'] = 1, [','] = 1, ['x'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1,
    ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
};

/* "references":["0x..", ...], the bulk of a dump: a table walk finds the
 * closing bracket when nothing but quoted hex stands before it (an odd
 * number of quotes falls back to the general parser). */
static int references(cur *c, mdp_analysis_obj *o)
{
  const char *p = c->p;
  size_t quotes = 0;
  int rc;
  while(p < c->e && WS(*p))
    p++;
  if(p < c->e && *p == '[') {
    const char *start = p + 1;
    for(p++; p < c->e && ref_char[(unsigned char)*p]; p++)
      quotes += *p == '"';
    if(p < c->e && *p == ']' && quotes % 2 == 0) {
      o->refs = start;
      o->refs_len = (size_t)(p - start);
      c->p = p + 1;
      return 0;
    }
    if(p == c->e && c->partial) {
      o->refs = start;
      o->refs_len = (size_t)(p - start);
      o->refs_open = 1;
    }
  }
  rc = skip_value(c);
  if(rc == 0 && o->refs_open) /* closed after all: not plain addresses */
    o->refs = NULL, o->refs_open = 0;
  return rc;
}

static int field(cur *c, mdp_analysis_obj *o, const char *k, size_t kn)
{
  const char *s;
  size_t n;
  int rc;

#define KEY(lit) (kn == sizeof(lit) - 1 && memcmp(k, lit, kn) == 0)
  switch(k[0]) {
  case 'a':
    if(KEY("address"))
      return addr_value(c, &o->address, ADDR_NONZERO, "bad address");
    break;
  case 't':
    if(KEY("type")) {
      if((rc = str_value(c, &s, &n)) != 0)
        return rc;
      o->type = n ? type_of(s, n) : MDP_T_UNKNOWN;
      return 0;
    }
    break;
  case 'c':
    if(KEY("class"))
      return addr_value(c, &o->class_addr, ADDR_ZERO_OK, "bad class address");
    break;
  case 'v':
    if(KEY("value")) {
      skip_ws(c);
      if(c->p < c->e && *c->p != '"') /* a SYMBOL's value may be anything */
        return skip_value(c);
      rc = str_value(c, &o->value, &o->value_len);
      if(rc == 1 && o->value)
        o->value_cut = 1;
      return rc;
    }
    break;
  case 'n':
    if(KEY("name")) {
      skip_ws(c);
      if(c->p < c->e && *c->p != '"')
        return skip_value(c);
      return str_value(c, &o->name, &o->name_len);
    }
    break;
  case 's':
    if(KEY("struct")) {
      skip_ws(c);
      if(c->p < c->e && *c->p != '"')
        return skip_value(c);
      return str_value(c, &o->struct_name, &o->struct_len);
    }
    break;
  case 'r':
    if(KEY("references"))
      return references(c, o);
    if(KEY("root")) {
      skip_ws(c);
      if(c->p < c->e && *c->p != '"')
        return skip_value(c);
      return str_value(c, &o->root, &o->root_len);
    }
    break;
  case 'f':
    if(KEY("file"))
      return str_value(c, &o->file, &o->file_len);
    if(KEY("flags"))
      return flags(c, o);
    break;
  case 'l':
    if(KEY("line"))
      return u32_value(c, &o->line, &o->has_line);
    break;
  case 'g':
    if(KEY("generation"))
      return u32_value(c, &o->generation, &o->has_gen);
    break;
  case 'm':
    if(KEY("memsize"))
      return num_value(c, &o->memsize);
    break;
  case 'b':
    if(KEY("bytesize"))
      return num_value(c, &o->bytesize);
    break;
  }
#undef KEY
  return skip_value(c);
}

/* A long line's last bytes: the fields that follow its long middle. */
static void scan_tail(const mdp_analysis_line *l, mdp_analysis_obj *o)
{
  static const char *const keys[] = {
      ", \"file\":", ", \"line\":", ", \"generation\":", ", \"memsize\":", ", \"flags\":"};
  for(size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    size_t kl = strlen(keys[i]);
    const char *at = memmem(l->tail, l->tail_len, keys[i], kl);
    if(!at)
      continue;
    cur c = {at + kl, l->tail + l->tail_len, 1, NULL};
    (void)field(&c, o, keys[i] + 3, kl - 5);
  }
}

/* After blanks, the next character must be ch (it is not consumed): 0, or
 * 1 where the line ends first, or -1 with why. */
static int expect_char(cur *c, char ch, const char *why)
{
  skip_ws(c);
  if(c->p >= c->e)
    return 1;
  if(*c->p != ch) {
    c->why = why;
    return -1;
  }
  return 0;
}

int mdp_analysis_scan(const mdp_analysis_line *l, mdp_analysis_obj *o, const char **why)
{
  cur c = {l->head, l->head + l->head_len, l->tail != NULL, NULL};
  const char *k;
  size_t kn;
  int rc = 0;

  memset(o, 0, sizeof(*o));
  skip_ws(&c);
  if(c.p >= c.e || *c.p != '{') {
    *why = c.p >= c.e ? "empty line" : "not a JSON object";
    return -1;
  }
  c.p++;
  skip_ws(&c);
  if(c.p < c.e && *c.p == '}') {
    c.p++;
    goto end;
  }
  for(;;) {
    if((rc = expect_char(&c, '"', "a key was expected")) != 0)
      break;
    if((rc = str(&c, &k, &kn)) != 0)
      break;
    if((rc = expect_char(&c, ':', "':' was expected after a key")) != 0)
      break;
    c.p++;
    if(kn == 0)
      rc = skip_value(&c);
    else
      rc = field(&c, o, k, kn);
    if(rc)
      break;
    skip_ws(&c);
    if(c.p < c.e && *c.p == ',') {
      c.p++;
      continue;
    }
    if(c.p < c.e && *c.p == '}') {
      c.p++;
      goto end;
    }
    if(c.p >= c.e) {
      rc = 1;
      break;
    }
    c.why = "',' or '}' was expected";
    rc = -1;
    break;
  }
  if(rc == 1 && c.partial) {
    scan_tail(l, o);
    goto check;
  }
  if(rc == 1 || !c.why)
    c.why = "the object is not closed (line cut short?)";
  *why = c.why;
  return -1;
end:
  skip_ws(&c);
  if(c.p != c.e) {
    *why = "text after the object";
    return -1;
  }
  if(l->tail)
    scan_tail(l, o);
check:
  if(!o->address && o->type != MDP_T_ROOT && o->type != MDP_T_SHAPE) {
    *why = o->type ? "object without an address" : "neither an object nor a root";
    return -1;
  }
  return 0;
}

static size_t put_utf8(char *out, size_t room, unsigned cp)
{
  unsigned char b[4];
  size_t n;
  if(cp < 0x80)
    b[0] = (unsigned char)cp, n = 1;
  else if(cp < 0x800)
    b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
  else if(cp < 0x10000)
    b[0] = (unsigned char)(0xe0 | cp >> 12), b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)),
    b[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
  else
    b[0] = (unsigned char)(0xf0 | cp >> 18), b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f)),
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (unsigned char)(0x80 | (cp & 0x3f)),
    n = 4;
  if(n > room)
    return 0;
  memcpy(out, b, n);
  return n;
}

static int hex4(const char *s, unsigned *v)
{
  *v = 0;
  for(int i = 0; i < 4; i++) {
    char ch = s[i];
    unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                 : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                 : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10)
                                          : 16u;
    if(d > 15)
      return -1;
    *v = *v << 4 | d;
  }
  return 0;
}

size_t mdp_analysis_unescape(const char *in, size_t len, char *out, size_t outlen)
{
  size_t i = 0, o = 0;
  if(!outlen)
    return 0;
  while(i < len && o + 1 < outlen) {
    unsigned char ch = (unsigned char)in[i];
    if(ch != '\\' || i + 1 >= len) {
      out[o++] = (char)ch;
      i++;
      continue;
    }
    char e = in[i + 1];
    unsigned cp;
    i += 2;
    switch(e) {
    case 'n': cp = '\n'; break;
    case 't': cp = '\t'; break;
    case 'r': cp = '\r'; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'u':
      if(i + 4 > len || hex4(in + i, &cp)) {
        cp = 0xfffd;
        break;
      }
      i += 4;
      if(cp >= 0xd800 && cp < 0xdc00 && i + 6 <= len && in[i] == '\\' && in[i + 1] == 'u') {
        unsigned lo;
        if(!hex4(in + i + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          i += 6;
        }
      }
      if(cp >= 0xd800 && cp < 0xe000)
        cp = 0xfffd;
      break;
    default: cp = (unsigned char)e; break;
    }
    size_t w = put_utf8(out + o, outlen - 1 - o, cp);
    if(!w)
      break;
    o += w;
  }
  out[o] = '\0';
  return o;
}

char *mdp_analysis_decoded(const mdp_analysis_strtab *t, uint32_t id)
{
  size_t n;
  const char *s = mdp_analysis_strtab_str(t, id, &n);
  if(!s)
    return NULL;
  char *out = malloc(n + 1);
  if(out)
    mdp_analysis_unescape(s, n, out, n + 1);
  return out;
}
