# CaptureCooldown is kept per identity, not per claimed name (issue 11): a
# worker of user nobody that calls itself billing-api is captured first;
# the real billing-api (another uid) reaching CaptureSize right after is
# still captured. Before, the impostor's capture put the name in its
# one-hour cooldown and the real worker's capture was skipped.
require_relative "helper"

class CooldownIdentityTest < PluginTest::Case
  NOBODY = 65_534

  def test_impostor_name
    start(<<~KEYS)
      SocketMode "0666"
      CaptureSize "32M"
      CaptureCooldown "1h"
      Plan "dump"
      CaptureDirectory "#{site.dir}/captures"
    KEYS
    File.chmod(0o711, site.dir)
    own = File.join(site.dir, "certs-nobody")
    FileUtils.mkdir_p(own)
    cert, key, ca = [site.cert("worker"), site.key("worker"), site.ca].map do |f|
      File.join(own, File.basename(f)).tap { |c| FileUtils.cp(f, c) }
    end
    FileUtils.chown_R(NOBODY, NOBODY, own)
    out = File.join(site.dir, "impostor.out")
    pid = Process.spawn("setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups", "--",
                        E2E.test_worker_path, "worker", "--socket", site.socket, "--cert", cert,
                        "--key", key, "--ca", ca, "--name", "billing-api", "--allocate-mb", "64",
                        out: [out, "w"], err: [:child, :out])
    impostor = E2E::TestWorker.new(name: "billing-api", pid: pid, out_path: out)
    site.workers << impostor
    site.wait_welcomed(impostor)
    site.wait_log("capturing worker billing-api (pid #{pid}")

    real = site.test_worker("billing-api", "--allocate-mb", 64, label: "real")
    site.wait_welcomed(real)
    wait("the real billing-api is captured or skipped") do
      site.log_has?("capturing worker billing-api (pid #{real.pid}") ||
        site.log_has?(/billing-api \(pid #{real.pid}\) skipped/)
    end
    refute site.log_has?(/billing-api \(pid #{real.pid}\) skipped/),
           "the impostor's capture held the real worker back"
    assert_collectd_alive
  end
end
