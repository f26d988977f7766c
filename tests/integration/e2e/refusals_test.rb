# Issue 4 acceptance: peers that must not get in are refused and logged, and
# collectd keeps running and keeps serving the legitimate workers:
# a client of a foreign CA, garbage bytes on the socket, a worker claiming
# another PID, an operator certificate trying to register as a worker, and a
# worker certificate running memory_dump through memdiagctl.
require_relative "../harness/harness"

class E2ERefusalsTest < Minitest::Test
  RAWCLIENT = E2E.setting("MEMDIAG_E2E_RAWCLIENT")

  def site
    E2E::SharedSite.get("refusals", workers: %w[e2e-legit-a e2e-legit-b]).tap do |s|
      @certs_added ||= begin
        s.add_cert("w2", "worker") unless File.exist?(s.cert("w2"))
        true
      end
    end
  end

  # Runs the block, then returns the plugin's log lines written meanwhile.
  def new_log_lines
    before = site.log.bytesize
    yield
    site.wait_until("collectd logs the refusal") { site.log.bytesize > before }
    sleep 0.5 # let the rest of the refusal's lines reach the log
    site.log.byteslice(before..).lines.grep(/memdiag plugin:/).join
  end

  def assert_still_serving
    assert site.collectd_alive?, "collectd died:\n#{site.log}"
    list = site.workers_json
    site.workers.each do |w|
      e = list.find { |x| x["pid"] == w.pid }
      refute_nil e, "legit worker #{w.name} no longer listed"
      ping = site.ctl("ping", "connection_id=#{e['connection_id']}")
      assert ping.ok?, ping.to_s
    end
  end

  def test_client_with_a_foreign_ca_is_refused_on_both_sides
    foreign = site.foreign_certs
    r = nil
    logged = new_log_lines do
      r = site.ctl("workers", env: { "MEMDIAG_CERT" => "#{foreign}/operator.pem",
                                     "MEMDIAG_KEY" => "#{foreign}/operator.key",
                                     "MEMDIAG_CA" => "#{foreign}/ca.pem" })
    end
    assert_equal 1, r.code, r.to_s
    assert_includes r.err, "the plugin's certificate is not signed by your CA"
    refute_empty logged

    # Our CA, but a certificate the plugin's CA never signed.
    logged = new_log_lines do
      r = site.ctl("workers", env: { "MEMDIAG_CERT" => "#{foreign}/operator.pem",
                                     "MEMDIAG_KEY" => "#{foreign}/operator.key" })
    end
    assert_equal 1, r.code, r.to_s
    assert_match(/refused|does not accept your certificate|closed the connection/, r.err)
    assert_match(/certificate|TLS|handshake/i, logged)
    refute_includes r.out, "e2e-legit-a"
    assert_still_serving
  end

  # Reads until the plugin closes the connection (a TLS alert may come first).
  def closed_by_peer?(sock)
    deadline = Time.now + E2E::WAIT
    while Time.now < deadline
      sock.readpartial(65_536) if sock.wait_readable(1)
    end
    false
  rescue EOFError, Errno::ECONNRESET
    true
  end

  def test_garbage_bytes_are_dropped
    closed = nil
    logged = new_log_lines do
      UNIXSocket.open(site.socket) do |s|
        begin
          s.write("GET / HTTP/1.0\r\n\r\n" + Random.new(4).bytes(4096))
        rescue Errno::EPIPE, Errno::ECONNRESET
          nil # already dropped
        end
        closed = closed_by_peer?(s)
      end
    end
    assert closed, "the plugin kept a connection that sent garbage open"
    refute_empty logged
    assert_still_serving
  end

  def test_worker_claiming_another_pid_is_refused
    out = nil
    logged = new_log_lines do
      out, = Open3.capture2e(RAWCLIENT, site.socket, site.cert("worker"), site.key("worker"), site.ca,
                             "hello", "e2e-liar", "1")
    end
    refute_match(/^welcome/, out)
    assert_match(/^(goodbye|closed)/, out)
    assert_match(/pid|PID/, logged)
    refute site.workers_json.any? { |w| w["name"] == "e2e-liar" }
    assert_still_serving
  end

  def test_operator_certificate_cannot_register_as_a_worker
    out = nil
    new_log_lines do
      out, = Open3.capture2e(RAWCLIENT, site.socket, site.cert("operator"), site.key("operator"),
                             site.ca, "hello", "e2e-operator-worker", Process.pid.to_s)
    end
    refute_match(/^welcome/, out)
    refute site.workers_json.any? { |w| w["name"] == "e2e-operator-worker" }
    assert_still_serving
  end

  def test_worker_certificate_cannot_run_memory_dump
    target = site.workers.first
    id = site.workers_json.find { |w| w["pid"] == target.pid }.fetch("connection_id")
    path = File.join(target.dump_dir, "by-a-worker.json")
    r = nil
    logged = new_log_lines do
      r = site.ctl("memory_dump", "connection_id=#{id}", "path=#{path}",
                   env: { "MEMDIAG_CERT" => site.cert("w2"), "MEMDIAG_KEY" => site.key("w2") })
    end
    refute r.ok?, r.to_s
    assert_equal 1, r.code
    assert_match(/certificate/, r.err)
    refute File.exist?(path), "a worker certificate made a heap dump"
    refute_empty logged
    assert_still_serving
  end
end
