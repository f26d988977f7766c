# memdiagctl's command line: usage errors exit 2 naming what is wrong, before
# any connection is made; connection failures exit 1 with a clear reason.
# Needs no collectd.
require "minitest/autorun"
require "open3"
require "tmpdir"

class E2EUsageTest < Minitest::Test
  CTL = ENV.fetch("MEMDIAG_E2E_CTL")

  def ctl(*args, env: {})
    base = { "MEMDIAG_SOCKET" => nil, "MEMDIAG_CERT" => "/nonexistent/op.pem",
             "MEMDIAG_KEY" => "/nonexistent/op.key", "MEMDIAG_CA" => "/nonexistent/ca.pem" }
    Open3.capture3(base.merge(env), CTL, *args)
  end

  def assert_usage(args, message)
    out, err, st = ctl(*args)
    assert_equal 2, st.exitstatus, "memdiagctl #{args.join(' ')}: #{out}#{err}"
    assert_includes err, message
    assert_includes err, "memdiagctl --help"
  end

  def test_usage_errors_exit_2_and_name_the_problem
    assert_usage %w[frobnicate], "unknown verb 'frobnicate'"
    assert_usage %w[], "no verb given"
    assert_usage %w[memory_dump path=/x], "memory_dump needs connection_id=N"
    assert_usage %w[ping], "ping needs connection_id=N"
    assert_usage %w[ping connection_id=abc], "connection_id must be a positive integer, not 'abc'"
    assert_usage %w[ping connection_id=0], "connection_id must be a positive integer"
    assert_usage %w[ping connection_id=1 path=/tmp/x], "ping does not take 'path'"
    assert_usage %w[memory_dump connection_id=1 path=/x mode=sideways], "mode must be inline, fork or auto, not 'sideways'"
    assert_usage %w[memory_dump connection_id=1 path=/x shapes=maybe], "shapes must be true or false, not 'maybe'"
    assert_usage %w[garbage_profile_start connection_id=1 keep=yes], "keep must be true or false, not 'yes'"
    assert_usage %w[memory_dump connection_id=1 path=/x keep=true], "memory_dump does not take 'keep'"
    assert_usage %w[thread_dump connection_id=1 connection_id=2], "'connection_id' given twice"
    assert_usage %w[thread_dump connection_id=1 junk], "argument 'junk' is not key=value"
    assert_usage %w[workers --frob], "unknown option '--frob'"
    assert_usage %w[workers --timeout soon], "--timeout takes whole seconds"
    assert_usage %w[workers --timeout], "--timeout needs a value"
  end

  def test_missing_credentials_are_usage_errors
    _, err, st = Open3.capture3({ "MEMDIAG_CERT" => nil, "MEMDIAG_KEY" => nil, "MEMDIAG_CA" => nil },
                                CTL, "workers")
    assert_equal 2, st.exitstatus
    assert_includes err, "no operator certificate: give --cert FILE or set MEMDIAG_CERT"
  end

  def test_help_and_version_exit_0
    out, _, st = ctl("--help")
    assert_equal 0, st.exitstatus
    %w[workers memory_dump allocation_trace_start allocation_trace_stop garbage_profile_start
       garbage_profile_stop scheduler_dump thread_dump ping status capture --json --timeout].each do |w|
      assert_includes out, w
    end
    out, _, st = ctl("help")
    assert_equal 0, st.exitstatus
    assert_includes out, "usage: memdiagctl"
    out, _, st = ctl("--version")
    assert_equal 0, st.exitstatus
    assert_match(/^memdiagctl \d+\.\d+\.\d+/, out)
  end

  def test_unloadable_certificate_and_missing_socket_exit_1
    _, err, st = ctl("workers")
    assert_equal 1, st.exitstatus
    assert_includes err, "cannot load the operator certificate"
    assert_includes err, "/nonexistent/op.pem"

    Dir.mktmpdir do |d|
      certs = File.join(d, "certs")
      system(ENV.fetch("MEMDIAG_E2E_CERTS_TOOL"), certs, out: File::NULL, exception: true)
      env = { "MEMDIAG_SOCKET" => File.join(d, "none.ipc"), "MEMDIAG_CERT" => "#{certs}/operator.pem",
              "MEMDIAG_KEY" => "#{certs}/operator.key", "MEMDIAG_CA" => "#{certs}/ca.pem" }
      _, err, st = ctl("workers", env: env)
      assert_equal 1, st.exitstatus
      assert_includes err, "cannot connect to #{d}/none.ipc: no such socket"

      # An option's value is never taken for the verb: a socket named
      # "replay" still means the plugin's workers, not an offline replay.
      Dir.chdir(d) do
        _, err, st = ctl("--socket", "replay", "workers", env: env)
        assert_equal 1, st.exitstatus, err
        assert_includes err, "cannot connect to replay: no such socket"
      end
    end
  end
end
