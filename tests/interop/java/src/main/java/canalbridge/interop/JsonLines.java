package canalbridge.interop;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** One JSON object per line on stdout, nulls kept (a NULL column must stay visible). */
final class JsonLines {

    private final PrintStream out;

    private JsonLines(PrintStream out) {
        this.out = out;
    }

    static JsonLines stdout() {
        return new JsonLines(new PrintStream(System.out, false, StandardCharsets.UTF_8));
    }

    void write(Map<String, Object> line) {
        out.println(JSON.toJSONString(line, JSONWriter.Feature.WriteMapNullValue));
        out.flush();
    }
}
