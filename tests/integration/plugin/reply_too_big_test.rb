# A worker's answer that fits in MaxFrameSize, wrapped for the operator, no
# longer does. The operator gets an error saying so on a connection that
# stays usable; the plugin keeps serving the worker.
require_relative "helper"

class ReplyTooBigTest < PluginTest::Case
  def test_reply_too_big
    start("  MaxFrameSize 4096")
    big = site.test_worker("big", "--dump-frame", 4096)
    id = site.wait_welcomed(big)
    dump = site.control("thread_dump", id)
    puts dump.out
    assert_equal 3, dump.code, "thread_dump should exit 3 (an error reply): #{dump}"
    assert_match(/^status=error/, dump.out, "no error status for the operator")
    assert_match(/^error=.*MaxFrameSize/, dump.out, "the error does not name MaxFrameSize")
    assert_match(/^reply status=ok/, site.control("ping", id).out, "ping after the big answer failed")
    assert_collectd_alive
  end
end
