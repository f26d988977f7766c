/* Streams: a dump's bytes sent over the hook's own connection instead of
 * being written to a file in the worker (containers: the plugin's capture
 * folder is not in the worker's file system).
 *
 * The runtime writes the bytes into a pipe (mdh_stream_open); the I/O
 * thread reads the other end and sends DumpChunk frames as far as the
 * plugin's credit allows, so neither side ever buffers more than the
 * window. The runtime never waits for the plugin while it holds anything
 * of the application's: a fork child writes, or the runtime's own thread
 * writes with its lock released. When the writer is done the runtime calls
 * mdh_stream_finish, which waits until the I/O thread has drained the pipe
 * and sent DumpEnd (size and SHA-256 of every byte), so the reply that
 * follows always comes after the end of its stream.
 *
 * Ownership: the stream belongs to the hook (h->stream, guarded by h->mu);
 * the pipe's read end is the hook's, the write end the runtime's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "internal.h"
#include "md/text.h"

#define CHUNK_BYTES    (128u * 1024u)
#define DEFAULT_WINDOW (4u * 1024u * 1024u)
#define PIPE_BYTES     (1024 * 1024)

struct mdh_stream {
  uint64_t connection_id, request_id;
  int read_fd;
  uint64_t credit, sent;
  EVP_MD_CTX *sha;
  int finished;    /* the runtime's writer is done (mdh_stream_finish) */
  int eof;         /* the read end saw end of file */
  int ended;       /* DumpEnd sent, or the stream failed */
  char error[256]; /* the runtime's error, or why the stream failed */
  int failed;      /* ended without a successful DumpEnd */
  uint8_t *chunk;  /* CHUNK_BYTES, reused */
};

static void stream_free(mdh_stream *st)
{
  if(!st)
    return;
  if(st->read_fd >= 0)
    close(st->read_fd);
  EVP_MD_CTX_free(st->sha);
  free(st->chunk);
  free(st);
}

int mdh_stream_open(mdh_hook *h, const mdh_request *req, int *write_fd)
{
  mdh_stream *st;
  int fds[2];

  if(!h || !req || !write_fd)
    return MDH_EINVAL;
  *write_fd = -1;
  if(h->forked_away)
    return MDH_EFORKED;
  st = calloc(1, sizeof *st);
  if(!st)
    return MDH_ENOMEM;
  st->read_fd = -1;
  st->chunk = malloc(CHUNK_BYTES);
  st->sha = EVP_MD_CTX_new();
  if(!st->chunk || !st->sha || EVP_DigestInit_ex(st->sha, EVP_sha256(), NULL) != 1) {
    stream_free(st);
    return MDH_ENOMEM;
  }
  if(pipe2(fds, O_CLOEXEC) < 0) {
    stream_free(st);
    return MDH_ENOMEM;
  }
  /* a bigger pipe means fewer wake-ups of the writer; best effort */
  (void)fcntl(fds[1], F_SETPIPE_SZ, PIPE_BYTES);
  (void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
  st->read_fd = fds[0];
  st->connection_id = req->connection_id;
  st->request_id = req->id;
  st->credit = req->stream_window ? req->stream_window : DEFAULT_WINDOW;

  pthread_mutex_lock(&h->mu);
  if(h->stream || h->stopping || atomic_load(&h->connection_id) != req->connection_id) {
    int busy = h->stream != NULL;
    pthread_mutex_unlock(&h->mu);
    close(fds[1]);
    stream_free(st);
    return busy ? MDH_EINVAL : MDH_ESTALE;
  }
  h->stream = st;
  pthread_mutex_unlock(&h->mu);
  mdh_wake_signal(&h->wake);
  *write_fd = fds[1];
  return MDH_OK;
}

int mdh_stream_finish(mdh_hook *h, uint64_t request_id, const char *error, uint64_t *bytes,
                      char *why, size_t whylen)
{
  mdh_stream *st;
  int rc;

  if(bytes)
    *bytes = 0;
  if(!h)
    return MDH_EINVAL;
  pthread_mutex_lock(&h->mu);
  st = h->stream;
  if(!st || st->request_id != request_id) {
    pthread_mutex_unlock(&h->mu);
    md_seterr(why, whylen, "no stream is open for request %llu", (unsigned long long)request_id);
    return MDH_EINVAL;
  }
  if(!st->ended) {
    st->finished = 1;
    if(error && !st->error[0])
      snprintf(st->error, sizeof st->error, "%s", error);
  }
  pthread_mutex_unlock(&h->mu);
  mdh_wake_signal(&h->wake);

  pthread_mutex_lock(&h->mu);
  while(!st->ended && !h->stopping)
    pthread_cond_wait(&h->cond, &h->mu);
  if(!st->ended) {
    md_seterr(why, whylen, "the hook stopped before the stream ended");
    rc = MDH_ESTOPPED;
  } else if(st->failed) {
    md_seterr(why, whylen, "%s", st->error);
    rc = MDH_ESTALE;
  } else {
    rc = MDH_OK;
  }
  if(bytes)
    *bytes = st->sent;
  h->stream = NULL;
  pthread_mutex_unlock(&h->mu);
  stream_free(st);
  return rc;
}

/* ---- I/O thread ---- */

static void end_locked(mdh_hook *h, mdh_stream *st, int failed, const char *why)
{
  st->ended = 1;
  st->failed = failed;
  if(failed && why && !st->error[0])
    snprintf(st->error, sizeof st->error, "%s", why);
  if(st->read_fd >= 0) {
    /* a writer still running gets EPIPE instead of blocking forever */
    close(st->read_fd);
    st->read_fd = -1;
  }
  pthread_cond_broadcast(&h->cond);
}

int mdh_stream_poll_fd(mdh_hook *h)
{
  int fd = -1;
  pthread_mutex_lock(&h->mu);
  if(h->stream && !h->stream->ended && !h->stream->eof && h->stream->credit > 0)
    fd = h->stream->read_fd;
  pthread_mutex_unlock(&h->mu);
  return fd;
}

int mdh_stream_wants_turn(mdh_hook *h)
{
  int yes;
  pthread_mutex_lock(&h->mu);
  yes = h->stream && !h->stream->ended && h->stream->finished &&
        (h->stream->error[0] || h->stream->credit > 0);
  pthread_mutex_unlock(&h->mu);
  return yes;
}

/* A cancel ends the stream as a lost connection does: the read end closes,
 * so the writer (the runtime's thread, or a fork child, which then exits
 * and is reaped by the runtime) gets EPIPE instead of writing the whole
 * dump for nothing, and mdh_stream_finish reports the plugin's reason. */
void mdh_stream_on_credit(mdh_hook *h, uint64_t connection_id, const Memdiag__V1__StreamCredit *c)
{
  mdh_stream *st;

  pthread_mutex_lock(&h->mu);
  st = h->stream;
  if(st && st->connection_id == connection_id && st->request_id == c->request_id) {
    if(c->cancel && c->cancel[0] && !st->ended) {
      char why[sizeof st->error];
      snprintf(why, sizeof why, "the plugin stopped the stream: %s", c->cancel);
      md_printable_inplace(why, MD_TEXT_PLAIN);
      end_locked(h, st, 1, why);
    } else if(c->has_bytes) {
      st->credit += c->bytes;
    }
  }
  pthread_mutex_unlock(&h->mu);
}

void mdh_stream_connection_lost(mdh_hook *h, const char *why)
{
  pthread_mutex_lock(&h->mu);
  if(h->stream && !h->stream->ended)
    end_locked(h, h->stream, 1, why);
  pthread_mutex_unlock(&h->mu);
}

/* Frames are built on the stack; the bytes live in st->chunk, which is
 * only reused after md_conn_send has copied them. */
int mdh_stream_step(mdh_hook *h, uint64_t connection_id, mdh_stream_send_fn send, void *arg)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__DumpChunk chunk = MEMDIAG__V1__DUMP_CHUNK__INIT;
  Memdiag__V1__DumpEnd end = MEMDIAG__V1__DUMP_END__INIT;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned digest_len = 0;
  mdh_stream *st;
  ssize_t n = 0;
  size_t want;
  int finished, rc;

  pthread_mutex_lock(&h->mu);
  st = h->stream;
  if(!st || st->ended || st->connection_id != connection_id) {
    pthread_mutex_unlock(&h->mu);
    return MD_OK;
  }
  finished = st->finished;
  if(finished && st->error[0]) {
    /* the writer failed: the plugin discards what it has */
    end.has_request_id = 1;
    end.request_id = st->request_id;
    end.error = st->error;
    f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_END;
    f.dump_end = &end;
    rc = send(arg, &f);
    end_locked(h, st, 1, NULL);
    pthread_mutex_unlock(&h->mu);
    return rc;
  }
  want = st->credit < CHUNK_BYTES ? (size_t)st->credit : CHUNK_BYTES;
  pthread_mutex_unlock(&h->mu);

  if(want > 0) {
    /* only this thread reads the pipe: no lock needed around read(2) */
    n = read(st->read_fd, st->chunk, want);
    if(n < 0 && errno != EAGAIN && errno != EINTR) {
      char why[128];
      snprintf(why, sizeof why, "reading the dump from its writer failed: %s", strerror(errno));
      pthread_mutex_lock(&h->mu);
      end_locked(h, st, 1, why);
      pthread_mutex_unlock(&h->mu);
      return MD_OK;
    }
  }
  if(n == 0 && want > 0) {
    pthread_mutex_lock(&h->mu);
    st->eof = 1;
    pthread_mutex_unlock(&h->mu);
  }
  if(n > 0) {
    EVP_DigestUpdate(st->sha, st->chunk, (size_t)n);
    chunk.has_request_id = 1;
    chunk.request_id = st->request_id;
    chunk.has_data = 1;
    chunk.data.data = st->chunk;
    chunk.data.len = (size_t)n;
    f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK;
    f.dump_chunk = &chunk;
    rc = send(arg, &f);
    pthread_mutex_lock(&h->mu);
    st->credit -= (uint64_t)n;
    st->sent += (uint64_t)n;
    pthread_mutex_unlock(&h->mu);
    return rc;
  }
  /* Nothing read. Once the writer has finished, the pipe holds everything it
   * wrote: EOF or EAGAIN (another process may hold a copy of the write end)
   * both mean every byte has been sent. Without credit, wait for it. */
  if(!finished || want == 0)
    return MD_OK;
  EVP_DigestFinal_ex(st->sha, digest, &digest_len);
  end.has_request_id = 1;
  end.request_id = st->request_id;
  end.has_size = 1;
  end.size = st->sent;
  end.has_sha256 = 1;
  end.sha256.data = digest;
  end.sha256.len = digest_len;
  f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_END;
  f.dump_end = &end;
  rc = send(arg, &f);
  pthread_mutex_lock(&h->mu);
  end_locked(h, st, rc != MD_OK, "the connection failed while the stream ended");
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* In a forked child (fork.c, locks held): the stream is the parent's; only
 * its descriptor is closed here, the memory is left as the parent's. */
void mdh_stream_forget_in_child(mdh_hook *h)
{
  if(h->stream && h->stream->read_fd >= 0) {
    close(h->stream->read_fd);
    h->stream->read_fd = -1;
  }
  h->stream = NULL;
}

/* mdh_stop: a stream the runtime never finished. */
void mdh_stream_release(mdh_hook *h)
{
  stream_free(h->stream);
  h->stream = NULL;
}
