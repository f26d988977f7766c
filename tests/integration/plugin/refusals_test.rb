# Refusals: a client with a foreign CA, an expired certificate, garbage
# bytes, an oversized frame, a worker claiming another PID, a worker that
# never says hello, an operator certificate saying hello, a worker
# certificate sending a control request. Each is refused and logged, while
# collectd keeps running and keeps serving the legitimate worker.
require_relative "helper"

class RefusalsTest < PluginTest::Case
  def test_refusals
    start("  MaxFrameSize 64K\n  HandshakeTimeout 2")
    good = site.test_worker("good")
    site.wait_welcomed(good)
    site.wait_csv("memdiag-good", "memory-rss")

    # foreign CA
    fc = site.foreign_certs
    foreign = site.test_worker("foreign", "--exit-after", 5,
                               cert: File.join(fc, "worker.pem"), key: File.join(fc, "worker.key"))
    foreign.wait
    refute foreign.welcomed?, "a foreign-CA worker was welcomed"
    site.wait_log("memdiag plugin: refused connection from pid")

    # expired certificate
    site.run!(E2E::CERTS_TOOL, site.certs, "--add-expired", "old", "worker")
    old = site.test_worker("old", "--exit-after", 5, cert: site.cert("old"), key: site.key("old"))
    old.wait
    refute old.welcomed?, "an expired certificate was welcomed"
    wait("the expired certificate's refusal is logged with its reason") do
      site.log.lines.any? { |l| l.include?("refused connection") && l.include?("expired") }
    end

    # garbage bytes
    g = site.garbage
    assert g.ok?, "garbage: #{g}"
    assert_operator site.log.lines.grep(/refused connection from pid/).size, :>=, 3,
                    "garbage bytes not logged as a refused connection"

    # oversized frame
    big = site.test_worker("big", "--big-hello", 100_000)
    site.wait_log("larger than the size limit")
    refute big.welcomed?, "an oversized hello was welcomed"

    # worker claiming another PID
    liar = site.test_worker("liar", "--claim-pid", 1)
    wait("the liar is refused:\n#{liar.output}") { liar.output.include?("goodbye status=forbidden") }
    site.wait_log("it claims pid 1")
    assert site.log_has?("refused worker hello from pid #{liar.pid} (SO_PEERCRED): it claims pid 1"),
           "log does not name both pids"

    # worker that never says hello
    site.test_worker("silent", "--skip-hello")
    site.wait_log("no hello within 2000 ms")

    # operator certificate saying hello
    op = site.test_worker("op", "--exit-after", 10, cert: site.cert("operator"), key: site.key("operator"))
    op.wait
    assert_includes op.output, "goodbye status=forbidden", "operator hello not refused"
    assert site.log_has?("an operator certificate may not register as a worker"), "operator hello not logged"

    # worker certificate sending a control request
    sneaky = site.test_worker("sneaky", "--control-after-hello", "--exit-after", 3)
    wait("the worker's control is refused:\n#{sneaky.output}") do
      sneaky.output.include?("control_reply status=forbidden")
    end
    assert site.log_has?("a worker certificate may not run operator requests"), "worker control not logged"

    # collectd still serves the good worker
    assert_collectd_alive
    assert good.alive?, "the good worker was dropped"
    list = site.control("list")
    assert list.ok?, "list failed after the refusals: #{list}"
    assert_includes list.out, "pid=#{good.pid} name=good ", "good worker missing"
    refute_match(/name=liar|name=op |name=xxx/, list.out, "a refused peer is listed")
    wait_more_rows("memdiag-good", "memory-rss")
  end
end
