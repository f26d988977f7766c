/* Ruby binding of libmemdiag-hook: Memdiag::Hook::Native.
 *
 * A thin layer: it turns Ruby hashes into mdh_config and mdh_reply_t and
 * mdh_request into a Ruby hash. Waiting for a request happens with the GVL
 * released and can be interrupted (Thread#kill, Thread#raise, process exit)
 * through mdh_wakeup(). Operations themselves run in Ruby (memdiag/hook). */
#include <ruby.h>
#ifdef __GLIBC__
#endif
#include <ruby/thread.h>

#include "memdiag/hook.h"
#include "allocator.h"
#include "sampler.h"

typedef struct {
  mdh_hook *hook; /* owned; NULL once stopped */
  /* Ruby threads in next_request, which use the hook without the GVL. A
   * close meanwhile (Runner#stop from a trap handler cannot join the hook's
   * thread first) leaves the hook here, shut down, and the last of them
   * frees it. */
  unsigned waiters;
  mdh_hook *closed; /* owned */
} native;

static void native_free(void *p)
{
  native *n = p;
  /* Not RUBY_TYPED_FREE_IMMEDIATELY: stopping joins the I/O thread, which
   * is not something to do in the middle of a GC sweep. */
  mdh_stop(n->hook);
  mdh_stop(n->closed);
  xfree(n);
}

static size_t native_size(const void *p)
{
  (void)p;
  return sizeof(native);
}

static const rb_data_type_t native_type = {
    .wrap_struct_name = "Memdiag::Hook::Native",
    .function = {.dmark = NULL, .dfree = native_free, .dsize = native_size},
    .flags = 0,
};

static VALUE native_alloc(VALUE klass)
{
  native *n;
  return TypedData_Make_Struct(klass, native, &native_type, n);
}

static native *get_native(VALUE self)
{
  native *n;
  TypedData_Get_Struct(self, native, &native_type, n);
  return n;
}

static mdh_hook *live_hook(VALUE self)
{
  native *n = get_native(self);
  if(!n->hook)
    rb_raise(rb_eRuntimeError, "memdiag hook already stopped");
  return n->hook;
}

static VALUE sym(const char *name) { return ID2SYM(rb_intern(name)); }

/* String option or NULL; raises if required and missing. A value that is
 * not a String is converted with to_str; the result is referenced only
 * here, so it is stored in *keep, which the caller guards until mdh_start()
 * has copied it (GC would otherwise free it under the pointer). */
static const char *opt_cstr(VALUE opts, const char *key, int required, VALUE *keep)
{
  VALUE v = rb_hash_aref(opts, sym(key));
  const char *s;
  if(NIL_P(v)) {
    if(required)
      rb_raise(rb_eArgError, "memdiag hook: %s: is required", key);
    return NULL;
  }
  s = StringValueCStr(v);
  *keep = v;
  return s;
}

static unsigned opt_uint(VALUE opts, const char *key)
{
  VALUE v = rb_hash_aref(opts, sym(key));
  return NIL_P(v) ? 0 : NUM2UINT(v);
}

/* Native.new(socket:, certificate:, key:, ca:, name:, runtime_version:,
 *            hook_version:, dump_directory:, capabilities:, backoff_min_ms:,
 *            backoff_max_ms:, handshake_timeout_ms:, queue_capacity:) */
static VALUE native_initialize(VALUE self, VALUE opts)
{
  native *n = get_native(self);
  mdh_config c = {0};
  VALUE caps;
  VALUE keep[8] = {Qnil, Qnil, Qnil, Qnil, Qnil, Qnil, Qnil, Qnil};
  VALUE *keep_caps = NULL;
  const char **names = NULL;
  long i, ncaps = 0;
  int rc;

  Check_Type(opts, T_HASH);
  if(n->hook || n->closed)
    rb_raise(rb_eRuntimeError, "memdiag hook already started");
  c.socket_path = opt_cstr(opts, "socket", 1, &keep[0]);
  c.certificate = opt_cstr(opts, "certificate", 1, &keep[1]);
  c.key = opt_cstr(opts, "key", 1, &keep[2]);
  c.ca = opt_cstr(opts, "ca", 1, &keep[3]);
  c.name = opt_cstr(opts, "name", 1, &keep[4]);
  c.runtime = "ruby";
  c.runtime_version = opt_cstr(opts, "runtime_version", 0, &keep[5]);
  c.hook_version = opt_cstr(opts, "hook_version", 0, &keep[6]);
  c.dump_directory = opt_cstr(opts, "dump_directory", 0, &keep[7]);
  c.backoff_min_ms = opt_uint(opts, "backoff_min_ms");
  c.backoff_max_ms = opt_uint(opts, "backoff_max_ms");
  c.handshake_timeout_ms = opt_uint(opts, "handshake_timeout_ms");
  c.queue_capacity = opt_uint(opts, "queue_capacity");

  caps = rb_hash_aref(opts, sym("capabilities"));
  if(!NIL_P(caps)) {
    Check_Type(caps, T_ARRAY);
    ncaps = RARRAY_LEN(caps);
    names = ALLOCA_N(const char *, ncaps + 1);
    /* on the stack, so that GC sees (and keeps) converted names */
    keep_caps = ALLOCA_N(VALUE, ncaps + 1);
    for(i = 0; i < ncaps; i++) {
      VALUE s = rb_ary_entry(caps, i);
      names[i] = StringValueCStr(s);
      keep_caps[i] = s;
    }
  }
  c.capabilities = names;
  c.n_capabilities = (size_t)ncaps;

  rc = mdh_start(&n->hook, &c);
  RB_GC_GUARD(opts);
  RB_GC_GUARD(caps);
  for(i = 0; i < 8; i++)
    RB_GC_GUARD(keep[i]);
  for(i = 0; i < ncaps; i++)
    RB_GC_GUARD(keep_caps[i]);
  if(rc)
    rb_raise(rb_eRuntimeError, "memdiag hook: cannot start: %s", mdh_strerror(rc));
  return self;
}

struct wait_args {
  mdh_hook *hook;
  mdh_request req;
  int timeout_ms;
  int rc;
};

static void *wait_without_gvl(void *p)
{
  struct wait_args *a = p;
  a->rc = mdh_next_request(a->hook, &a->req, a->timeout_ms);
  return NULL;
}

static void unblock(void *p) { mdh_wakeup(p); }

static VALUE opt_str_or_nil(const char *s) { return s ? rb_utf8_str_new_cstr(s) : Qnil; }

static VALUE request_hash(VALUE arg)
{
  const mdh_request *r = (const mdh_request *)arg;
  VALUE h = rb_hash_new();
  rb_hash_aset(h, sym("connection_id"), ULL2NUM(r->connection_id));
  rb_hash_aset(h, sym("id"), ULL2NUM(r->id));
  rb_hash_aset(h, sym("op"), rb_utf8_str_new_cstr(mdh_op_name(r->op)));
  rb_hash_aset(h, sym("path"), opt_str_or_nil(r->path));
  rb_hash_aset(h, sym("shapes"), r->shapes ? Qtrue : Qfalse);
  rb_hash_aset(h, sym("mode"), rb_utf8_str_new_cstr(mdh_mode_name(r->mode)));
  rb_hash_aset(h, sym("timeout_ms"), UINT2NUM(r->timeout_ms));
  rb_hash_aset(h, sym("keep"), r->keep ? Qtrue : Qfalse);
  rb_hash_aset(h, sym("payload"),
               r->op == MDH_OP_PING ? rb_str_new((const char *)r->payload, (long)r->payload_len)
                                    : Qnil);
  rb_hash_aset(h, sym("stream"), r->stream ? Qtrue : Qfalse);
  rb_hash_aset(h, sym("stream_window"), UINT2NUM(r->stream_window));
  rb_hash_aset(h, sym("allocation_sampling"),
               r->has_sampling ? UINT2NUM(r->sampling_interval) : Qnil);
  return h;
}

static VALUE wait_with_gvl_released(VALUE arg)
{
  struct wait_args *a = (struct wait_args *)arg;
  rb_thread_call_without_gvl(wait_without_gvl, a, unblock, a->hook);
  return Qnil;
}

/* A request taken from the core that will not reach Ruby: answer it, so the
 * plugin neither waits for it nor sees the worker busy with it. */
static void abandon_request(struct wait_args *a)
{
  mdh_reply_t r;

  memset(&r, 0, sizeof r);
  r.connection_id = a->req.connection_id;
  r.request_id = a->req.id;
  r.status = MDH_STATUS_ERROR;
  r.error = "the hook's Ruby thread was interrupted while taking this request";
  mdh_reply(a->hook, &r);
  mdh_request_clear(&a->req);
}

/* Free a hook closed while threads waited on it, once none does. */
static void release_closed(native *n)
{
  if(n->closed && n->waiters == 0) {
    mdh_stop(n->closed);
    n->closed = NULL;
  }
}

/* next_request(timeout_ms) -> Hash, nil (nothing yet, or interrupted) or
 * false (the hook is stopped or belongs to the parent process). */
static VALUE native_next_request(VALUE self, VALUE timeout)
{
  native *n = get_native(self);
  struct wait_args a;
  VALUE h = Qnil;
  int state = 0;

  memset(&a, 0, sizeof a);
  a.hook = live_hook(self);
  a.timeout_ms = NUM2INT(timeout);
  a.rc = MDH_EINTR; /* stays so if Ruby skips the call for a pending interrupt */
  /* Ruby handles interrupts (Thread#raise, #kill) that arrive while the
   * GVL is released when it takes the GVL back, after the core may have
   * handed over a request. */
  n->waiters++;
  rb_protect(wait_with_gvl_released, (VALUE)&a, &state);
  if(state) {
    if(a.rc == MDH_OK)
      abandon_request(&a);
  } else if(a.rc == MDH_OK) {
    h = rb_protect(request_hash, (VALUE)&a.req, &state);
    if(state)
      abandon_request(&a);
    mdh_request_clear(&a.req);
  }
  n->waiters--;
  release_closed(n);
  if(state)
    rb_jump_tag(state);
  switch(a.rc) {
  case MDH_OK: return h;
  case MDH_ETIMEDOUT:
  case MDH_EINTR: return Qnil;
  default: return Qfalse;
  }
}

/* stream_open(connection_id, request_id, window) -> Integer: the write end
 * of the stream's pipe (the caller closes it). Raises when the request's
 * connection has closed or another stream is open. */
static VALUE native_stream_open(VALUE self, VALUE conn_id, VALUE req_id, VALUE window)
{
  mdh_request req;
  int fd = -1, rc;

  memset(&req, 0, sizeof req);
  req.connection_id = NUM2ULL(conn_id);
  req.id = NUM2ULL(req_id);
  req.stream = 1;
  req.stream_window = NUM2UINT(window);
  rc = mdh_stream_open(live_hook(self), &req, &fd);
  if(rc != MDH_OK)
    rb_raise(rb_eIOError, "cannot open a stream to the plugin: %s", mdh_strerror(rc));
  return INT2NUM(fd);
}

struct finish_args {
  mdh_hook *hook;
  uint64_t request_id;
  const char *error;
  uint64_t bytes;
  char why[256];
  int rc;
};

static void *finish_without_gvl(void *p)
{
  struct finish_args *a = p;
  a->rc = mdh_stream_finish(a->hook, a->request_id, a->error, &a->bytes, a->why, sizeof a->why);
  return NULL;
}

/* stream_finish(request_id, error_or_nil) -> [bytes, nil] once every byte
 * and the end of the stream are sent, or [nil, why] when they could not be.
 * Waits with the GVL released. */
static VALUE native_stream_finish(VALUE self, VALUE req_id, VALUE error)
{
  native *n = get_native(self);
  struct finish_args a;
  VALUE keep = Qnil;

  memset(&a, 0, sizeof a);
  a.hook = live_hook(self);
  a.request_id = NUM2ULL(req_id);
  if(!NIL_P(error)) {
    keep = rb_obj_as_string(error);
    a.error = StringValueCStr(keep);
  }
  n->waiters++;
  rb_thread_call_without_gvl(finish_without_gvl, &a, NULL, NULL);
  n->waiters--;
  release_closed(n);
  RB_GC_GUARD(keep);
  if(a.rc == MDH_OK)
    return rb_ary_new_from_args(2, ULL2NUM(a.bytes), Qnil);
  return rb_ary_new_from_args(2, Qnil, rb_utf8_str_new_cstr(a.why[0] ? a.why : mdh_strerror(a.rc)));
}

static mdh_status status_from(VALUE v)
{
  const char *s;
  if(SYMBOL_P(v))
    v = rb_sym2str(v);
  if(!RB_TYPE_P(v, T_STRING))
    return MDH_STATUS_ERROR;
  s = StringValueCStr(v);
  if(!strcmp(s, "ok"))
    return MDH_STATUS_OK;
  if(!strcmp(s, "refused"))
    return MDH_STATUS_REFUSED;
  if(!strcmp(s, "timeout"))
    return MDH_STATUS_TIMEOUT;
  if(!strcmp(s, "unsupported"))
    return MDH_STATUS_UNSUPPORTED;
  if(!strcmp(s, "bad_request"))
    return MDH_STATUS_BAD_REQUEST;
  return MDH_STATUS_ERROR;
}

/* Optional String field: NULL when absent; anything else is converted
 * with to_s so that an operation returning a Pathname still works. */
static const char *field_cstr(VALUE reply, const char *key, VALUE *keep)
{
  VALUE v = rb_hash_aref(reply, sym(key));
  if(NIL_P(v))
    return NULL;
  if(!RB_TYPE_P(v, T_STRING))
    v = rb_obj_as_string(v);
  *keep = v;
  return StringValueCStr(v);
}

static int field_u64(VALUE reply, const char *key, uint64_t *out)
{
  VALUE v = rb_hash_aref(reply, sym(key));
  if(NIL_P(v))
    return 0;
  *out = NUM2ULL(v);
  return 1;
}

/* reply(connection_id, request_id, reply_hash) -> true when queued, false
 * when the connection it belongs to has gone (or the hook stopped). */
static VALUE native_reply(VALUE self, VALUE conn_id, VALUE req_id, VALUE reply)
{
  mdh_hook *hook = live_hook(self);
  mdh_reply_t r;
  VALUE keep[5] = {Qnil, Qnil, Qnil, Qnil, Qnil};
  VALUE data;
  int rc;

  Check_Type(reply, T_HASH);
  memset(&r, 0, sizeof r);
  r.connection_id = NUM2ULL(conn_id);
  r.request_id = NUM2ULL(req_id);
  r.status = status_from(rb_hash_aref(reply, sym("status")));
  r.error = field_cstr(reply, "error", &keep[0]);
  r.path = field_cstr(reply, "path", &keep[1]);
  r.note = field_cstr(reply, "note", &keep[2]);
  r.mode = field_cstr(reply, "mode", &keep[3]);
  data = rb_hash_aref(reply, sym("data"));
  if(!NIL_P(data)) {
    StringValue(data);
    keep[4] = data;
    r.data = (const uint8_t *)RSTRING_PTR(data);
    r.data_len = (size_t)RSTRING_LEN(data);
  }
  r.has_bytes = field_u64(reply, "bytes", &r.bytes);
  r.has_duration_us = field_u64(reply, "duration_us", &r.duration_us);
  r.has_pause_us = field_u64(reply, "pause_us", &r.pause_us);

  rc = mdh_reply(hook, &r);
  RB_GC_GUARD(keep[0]);
  RB_GC_GUARD(keep[1]);
  RB_GC_GUARD(keep[2]);
  RB_GC_GUARD(keep[3]);
  RB_GC_GUARD(keep[4]);
  if(rc == MDH_ENOMEM)
    rb_raise(rb_eNoMemError, "memdiag hook: out of memory queueing a reply");
  return rc == MDH_OK ? Qtrue : Qfalse;
}

static VALUE native_connection_id(VALUE self)
{
  native *n = get_native(self);
  return ULL2NUM(n->hook ? mdh_connection_id(n->hook) : 0);
}

static VALUE native_connections(VALUE self)
{
  native *n = get_native(self);
  return ULL2NUM(n->hook ? mdh_connections(n->hook) : 0);
}

static VALUE native_forked_away(VALUE self)
{
  native *n = get_native(self);
  return n->hook && mdh_forked_away(n->hook) ? Qtrue : Qfalse;
}

static void *shutdown_without_gvl(void *p)
{
  mdh_shutdown(p);
  return NULL;
}

/* Stop the I/O thread; waiters return false. The object stays usable for
 * the calls above until #close. */
static VALUE native_shutdown(VALUE self)
{
  native *n = get_native(self);
  if(n->hook)
    rb_thread_call_without_gvl(shutdown_without_gvl, n->hook, RUBY_UBF_IO, NULL);
  return Qnil;
}

/* Shut the hook down and free it; if Ruby threads still wait in
 * #next_request (they return false now), the last of them frees it. */
static VALUE native_close(VALUE self)
{
  native *n = get_native(self);
  mdh_hook *h = n->hook;
  n->hook = NULL;
  if(h && !mdh_forked_away(h))
    rb_thread_call_without_gvl(shutdown_without_gvl, h, RUBY_UBF_IO, NULL);
  /* threads do not survive a fork: in a child nobody waits on the parent's
   * hook, whatever the count inherited from the parent says */
  if(h && n->waiters && !n->closed && !mdh_forked_away(h))
    n->closed = h; /* shut down: the waiters return at once */
  else
    mdh_stop(h);
  return Qnil;
}

RUBY_FUNC_EXPORTED void Init_hook_native(void)
{
  VALUE mMemdiag = rb_define_module("Memdiag");
  VALUE mHook = rb_define_module_under(mMemdiag, "Hook");
  VALUE cNative = rb_define_class_under(mHook, "Native", rb_cObject);

  rb_define_const(cNative, "VERSION", rb_str_freeze(rb_utf8_str_new_cstr(MDH_VERSION)));
  rb_define_alloc_func(cNative, native_alloc);
  rb_define_method(cNative, "initialize", native_initialize, 1);
  rb_define_method(cNative, "next_request", native_next_request, 1);
  rb_define_method(cNative, "reply", native_reply, 3);
  rb_define_method(cNative, "connection_id", native_connection_id, 0);
  rb_define_method(cNative, "connections", native_connections, 0);
  rb_define_method(cNative, "forked_away?", native_forked_away, 0);
  rb_define_method(cNative, "stream_open", native_stream_open, 3);
  rb_define_method(cNative, "stream_finish", native_stream_finish, 2);
  rb_define_method(cNative, "shutdown", native_shutdown, 0);
  rb_define_method(cNative, "close", native_close, 0);
  mdh_allocator_define(cNative);
  mdh_sampler_init(mHook);
}
