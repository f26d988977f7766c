/* TLS context: TLS 1.3 only, mutual authentication against one CA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "internal.h"

void md_ssl_error_text(char *buf, size_t len, const char *prefix)
{
  unsigned long e = ERR_get_error();
  char detail[256] = "";

  if(e)
    ERR_error_string_n(e, detail, sizeof(detail));
  ERR_clear_error();
  snprintf(buf, len, "%s%s%s", prefix, detail[0] ? ": " : "", detail);
}

const char *md_role_name(md_role role)
{
  switch(role) {
  case MD_ROLE_PLUGIN: return "plugin";
  case MD_ROLE_WORKER: return "worker";
  case MD_ROLE_OPERATOR: return "operator";
  default: return "none";
  }
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *a)
{
  char prefix[512];

  if(!err || !errlen)
    return;
  snprintf(prefix, sizeof(prefix), fmt, a ? a : "(unset)");
  md_ssl_error_text(err, errlen, prefix);
}

int md_tls_ctx_new(md_tls_ctx **out, const md_tls_options *opts, char *err, size_t errlen)
{
  md_tls_ctx *ctx = NULL;
  int rc = MD_ECONFIG;

  if(!out || !opts)
    return MD_EINVAL;
  *out = NULL;
  ERR_clear_error();
  if(!opts->certificate || !opts->key || !opts->ca) {
    set_err(err, errlen, "certificate, key and CA are all required%s", "");
    return MD_ECONFIG;
  }
  ctx = calloc(1, sizeof(*ctx));
  if(!ctx)
    return MD_ENOMEM;
  ctx->server = opts->server;
  ctx->allowed_peer_roles = opts->allowed_peer_roles;
  ctx->ssl = SSL_CTX_new(opts->server ? TLS_server_method() : TLS_client_method());
  if(!ctx->ssl) {
    set_err(err, errlen, "cannot create TLS context%s", "");
    rc = MD_ENOMEM;
    goto fail;
  }
  if(!SSL_CTX_set_min_proto_version(ctx->ssl, TLS1_3_VERSION) ||
     !SSL_CTX_set_max_proto_version(ctx->ssl, TLS1_3_VERSION)) {
    set_err(err, errlen, "TLS 1.3 not available%s", "");
    goto fail;
  }
  if(SSL_CTX_use_certificate_chain_file(ctx->ssl, opts->certificate) != 1) {
    set_err(err, errlen, "cannot load certificate %s", opts->certificate);
    goto fail;
  }
  if(SSL_CTX_use_PrivateKey_file(ctx->ssl, opts->key, SSL_FILETYPE_PEM) != 1) {
    set_err(err, errlen, "cannot load key %s", opts->key);
    goto fail;
  }
  if(SSL_CTX_check_private_key(ctx->ssl) != 1) {
    set_err(err, errlen, "key does not match certificate %s", opts->certificate);
    goto fail;
  }
  if(SSL_CTX_load_verify_locations(ctx->ssl, opts->ca, NULL) != 1) {
    set_err(err, errlen, "cannot load CA %s", opts->ca);
    goto fail;
  }
  if(opts->server) {
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(opts->ca);
    if(names)
      SSL_CTX_set_client_CA_list(ctx->ssl, names);
    /* Sessions are never resumed on a local socket; tickets would only add
     * writes after the handshake. */
    SSL_CTX_set_num_tickets(ctx->ssl, 0);
    SSL_CTX_set_session_cache_mode(ctx->ssl, SSL_SESS_CACHE_OFF);
  }
  SSL_CTX_set_verify(ctx->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  SSL_CTX_set_mode(ctx->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  *out = ctx;
  return MD_OK;

fail:
  md_tls_ctx_free(ctx);
  return rc;
}

void md_tls_ctx_free(md_tls_ctx *ctx)
{
  if(!ctx)
    return;
  SSL_CTX_free(ctx->ssl);
  free(ctx);
}
