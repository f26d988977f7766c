/* Shared between the TLS context and connection code; not installed. */
#ifndef MD_INTERNAL_H
#define MD_INTERNAL_H

#include <openssl/ssl.h>

#include "md/tls.h"

struct md_tls_ctx {
  SSL_CTX *ssl;
  int server;
  unsigned allowed_peer_roles;
};

/* A BIO over a socket fd that writes with MSG_NOSIGNAL, so a peer that goes
 * away mid-write is an error return, never a SIGPIPE in the host process. */
BIO *md_bio_socket_new(int fd);

/* Write "prefix: <OpenSSL error queue>" to buf; clears the queue. */
void md_ssl_error_text(char *buf, size_t len, const char *prefix);

#endif
