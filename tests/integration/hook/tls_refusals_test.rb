# frozen_string_literal: true

# The hook only talks to a plugin: a server whose certificate comes from
# another CA, or that holds a worker's certificate instead of a plugin's, is
# refused. The refusal is logged, retried with backoff, and the worker's own
# work goes on.
require_relative "helper"

class HookTlsRefusalTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    ticks = 0
    loop do
      ticks += 1
      puts "ticks=\#{ticks} connection_id=\#{Memdiag::Hook.connection_id.inspect}" if (ticks % 10).zero?
      sleep 0.05
    end
  RUBY

  def test_server_certificate_from_another_ca_is_refused
    other = File.join(@dir, "other-certs")
    system(HookTest::CERTS_TOOL, other, out: File::NULL, err: File::NULL) || flunk("memdiag-certs failed")
    server = start_server(certs: other)
    worker = start_worker(WORKER, name: "strict-worker")

    worker.wait_err(/strict-worker: .*certificate verify failed.*; retrying/)
    server.wait_for("handshake_failed", after: 1) { true } # it came back: retried
    ticks = Integer(worker.wait_out(/ticks=(\d+)/)[1])
    worker.wait_out(/ticks=#{ticks + 20} connection_id=nil/)
    assert_equal 0, server.count("hello"), "no hello reaches an untrusted server"
    assert worker.alive?
  end

  def test_server_holding_a_worker_certificate_is_refused
    server = start_server(cert: "worker")
    worker = start_worker(WORKER, name: "role-worker")

    # OpenSSL already rejects the certificate's purpose (a worker's is for
    # clients only); the role check would refuse it next
    refused = Regexp.union(/TLS handshake failed: .*unsuitable certificate purpose/,
                           /peer certificate 'memdiag worker' has role 'worker'/)
    worker.wait_err(/role-worker: #{refused}.*; retrying/)
    server.wait_for("handshake_failed", after: 1) { true }
    ticks = Integer(worker.wait_out(/ticks=(\d+)/)[1])
    worker.wait_out(/ticks=#{ticks + 20} connection_id=nil/)
    assert_equal 0, server.count("hello")
  end
end
